#!/usr/bin/env python3
"""The supported Rust version is true (issue 23): every workspace member takes
`rust-version` from the workspace, and no locked dependency needs a newer Rust
than that. Reads `cargo metadata` (no build). Exits 1 with what is wrong."""
import json
import subprocess
import sys


def version(text):
    """`1.88` and `1.88.0` are the same version: padded to three parts."""
    parts = [int(x) for x in text.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


meta = json.loads(
    subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--locked"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
)
members = set(meta["workspace_members"])
with open("Cargo.toml", encoding="utf-8") as f:
    ws_text = f.read()
ws = None
for line in ws_text.splitlines():
    if line.startswith("rust-version"):
        ws = line.split("=", 1)[1].strip().strip('"')
if ws is None:
    sys.exit("Cargo.toml: [workspace.package] has no rust-version")
problems = []
newest = None
for p in meta["packages"]:
    rv = p.get("rust_version")
    if p["id"] in members:
        if rv != ws:
            problems.append(
                f"{p['name']}: rust-version {rv!r}, not the workspace's {ws} "
                f"(add `rust-version.workspace = true` to {p['manifest_path']})"
            )
    elif rv and version(rv) > version(ws):
        problems.append(f"dependency {p['name']} {p['version']} needs Rust {rv}, newer than {ws}")
    if rv and (newest is None or version(rv) > version(newest[0])):
        newest = (rv, p["name"])
if problems:
    print("rust-version check failed:", *problems, sep="\n- ")
    sys.exit(1)
print(f"rust-version {ws}: all {len(members)} members inherit it; the newest need of a locked "
      f"dependency is {newest[0]} ({newest[1]})")
