// gRPC interop through Node's HTTP/2 (nghttp2): the official @grpc/grpc-js client
// against `taskwire serve`, A2A 1.0 over gRPC. Usage:
//   NODE_PATH=<dir>/node_modules node grpc_js.js <host:port> <path to a2a.proto>
// Prints "PASS grpc-js <checks>" and exits 0, or prints the failed check and
// exits 1.
'use strict';
const grpc = require('@grpc/grpc-js');
const loader = require('@grpc/proto-loader');

const [addr, protoPath] = process.argv.slice(2);
const def = loader.loadSync(protoPath, {
  longs: String, enums: String, defaults: true, oneofs: true,
});
const pkg = grpc.loadPackageDefinition(def).lf.a2a.v1;
const client = new pkg.A2AService(addr, grpc.credentials.createInsecure(), {
  'grpc.max_receive_message_length': 16 * 1024 * 1024,
});
let checks = 0;
function check(ok, what) {
  if (!ok) {
    console.log(`FAIL ${what}`);
    process.exit(1);
  }
  checks += 1;
}
function md() {
  const m = new grpc.Metadata();
  m.set('a2a-version', '1.0');
  return m;
}
function call(method, req) {
  return new Promise((resolve, reject) => {
    client[method](req, md(), (err, res) => (err ? reject(err) : resolve(res)));
  });
}
function message(id, text) {
  return { message: { messageId: id, role: 'ROLE_USER', parts: [{ text }] } };
}
const run = `js-${process.pid}-${Date.now()}`;

async function main() {
  const sent = await call('SendMessage', message(`${run}-1`, 'hello'));
  check(sent.task && sent.task.status.state === 'TASK_STATE_COMPLETED', 'blocking send completes');
  const id = sent.task.id;

  const got = await call('GetTask', { id });
  check(got.id === id && got.artifacts.length === 1, 'get returns the task');

  try {
    await call('GetTask', { id: 'no-such-task' });
    check(false, 'unknown task is an error');
  } catch (e) {
    check(e.code === grpc.status.NOT_FOUND, `unknown task is NOT_FOUND (got ${e.code})`);
  }

  // Fifty calls at once on the one connection (HTTP/2 streams in parallel).
  const many = await Promise.all(
    Array.from({ length: 50 }, () => call('GetTask', { id })),
  );
  check(many.every((t) => t.id === id), 'fifty concurrent calls');

  // A message far over the 64 KiB default windows, echoed back.
  const big = 'x'.repeat(300 * 1024);
  const echoed = await call('SendMessage', message(`${run}-big`, big));
  const art = echoed.task.artifacts[0].parts[0].text;
  check(art === big, 'a 300 KB message round-trips');

  // Server streaming: frames until the task is terminal.
  const frames = await new Promise((resolve, reject) => {
    const out = [];
    const s = client.SendStreamingMessage(message(`${run}-2`, 'stream me'), md());
    s.on('data', (f) => out.push(f));
    s.on('error', reject);
    s.on('end', () => resolve(out));
  });
  check(frames.length >= 2 && frames[0].task, 'stream starts with the task');
  const last = frames[frames.length - 1];
  check(
    last.statusUpdate && last.statusUpdate.status.state === 'TASK_STATE_COMPLETED',
    'stream ends with the terminal status',
  );

  const listed = await call('ListTasks', {});
  check(listed.tasks.some((t) => t.id === id), 'list has the task');

  client.close();
  console.log(`PASS grpc-js ${checks}`);
}

main().catch((e) => {
  console.log(`FAIL ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
