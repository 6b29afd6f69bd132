"""HTTP/2 interop: the `h2` library (hyper-h2, which validates every frame and
header it receives) as a client of `taskwire serve`.

Usage: python hyper_h2.py <port>

On one connection, with a stream window of 1,000 bytes granted to the server
(so that every answer goes through its flow control), it sends twenty
concurrent JSON-RPC SendMessage requests of 50 KB each, respecting the server's
windows, and checks that every answer is a 200 whose task echoes the text. Then
GET /healthz. Prints "PASS hyper-h2 <streams>" and exits 0; any protocol error,
reset, or wrong answer exits non-zero.
"""

import json
import socket
import sys

import h2.config
import h2.connection
import h2.events
import h2.settings


def main(port: int) -> None:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(1)
    conn = h2.connection.H2Connection(
        config=h2.config.H2Configuration(client_side=True, validate_inbound_headers=True)
    )
    conn.initiate_connection()
    conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 1000})
    sock.sendall(conn.data_to_send())

    text = "y" * 50_000
    headers = [
        (":method", "POST"),
        (":scheme", "http"),
        (":authority", f"127.0.0.1:{port}"),
        (":path", "/a2a"),
        ("content-type", "application/json"),
    ]
    to_send, received, status, ended = {}, {}, {}, set()
    for i in range(20):
        sid = conn.get_next_available_stream_id()
        conn.send_headers(sid, headers)
        msg = {"messageId": f"hyper-h2-{port}-{i}", "role": "ROLE_USER", "parts": [{"text": text}]}
        body = {"jsonrpc": "2.0", "id": i, "method": "SendMessage", "params": {"message": msg}}
        to_send[sid] = json.dumps(body).encode()
        received[sid] = b""

    idle = 0
    while len(ended) < len(to_send):
        for sid, rest in to_send.items():
            n = min(len(rest), conn.local_flow_control_window(sid), conn.max_outbound_frame_size)
            if rest and n > 0:
                conn.send_data(sid, rest[:n], end_stream=n == len(rest))
                to_send[sid] = rest[n:]
        sock.sendall(conn.data_to_send())
        try:
            data = sock.recv(65536)
        except socket.timeout:
            idle += 1
            if idle > 10:
                sys.exit(f"FAIL no progress: {len(ended)} of {len(to_send)} streams ended")
            continue
        if not data:
            sys.exit("FAIL the server closed the connection")
        for ev in conn.receive_data(data):
            if isinstance(ev, h2.events.ResponseReceived):
                status[ev.stream_id] = dict(ev.headers)[b":status"]
            elif isinstance(ev, h2.events.DataReceived):
                received[ev.stream_id] += ev.data
                conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.StreamEnded):
                ended.add(ev.stream_id)
            elif isinstance(ev, (h2.events.StreamReset, h2.events.ConnectionTerminated)):
                sys.exit(f"FAIL {ev}")
        sock.sendall(conn.data_to_send())

    for sid, body in received.items():
        if status.get(sid) != b"200":
            sys.exit(f"FAIL stream {sid}: status {status.get(sid)}")
        answer = json.loads(body)
        echoed = answer["result"]["task"]["artifacts"][0]["parts"][0]["text"]
        if echoed != text:
            sys.exit(f"FAIL stream {sid}: the echo differs")

    sid = conn.get_next_available_stream_id()
    conn.send_headers(sid, [(":method", "GET"), (":scheme", "http"),
                            (":authority", f"127.0.0.1:{port}"), (":path", "/healthz")],
                      end_stream=True)
    sock.sendall(conn.data_to_send())
    got, health = b"", None
    while True:
        for ev in conn.receive_data(sock.recv(65536)):
            if isinstance(ev, h2.events.ResponseReceived):
                health = dict(ev.headers)[b":status"]
            elif isinstance(ev, h2.events.DataReceived):
                got += ev.data
            elif isinstance(ev, h2.events.StreamEnded):
                break
        else:
            continue
        break
    if health != b"200" or got != b"ok":
        sys.exit(f"FAIL /healthz: {health} {got!r}")
    conn.close_connection()
    sock.sendall(conn.data_to_send())
    print(f"PASS hyper-h2 {len(ended) + 1}")


if __name__ == "__main__":
    main(int(sys.argv[1]))
