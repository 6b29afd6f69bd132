// Interop check: the official TypeScript SDK (@modelcontextprotocol/sdk 1.x) as a
// client of taskwire's 2025-11-25 experimental tasks.
//
// Usage: node ts_tasks.mjs <server /mcp url> <sdk dir (holding node_modules)>
// Prints one line per check and "N passed, N failed" at the end; exits non-zero
// when a check fails. Run by crates/taskwire-mcp/tests/interop_ts.rs.

import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [url, sdkDir] = process.argv.slice(2);
if (!url || !sdkDir) {
  console.error('usage: node ts_tasks.mjs <url> <sdk dir>');
  process.exit(2);
}
const sdk = (p) => import(pathToFileURL(join(sdkDir, 'node_modules/@modelcontextprotocol/sdk/dist/esm', p)).href);
const { Client } = await sdk('client/index.js');
const { StreamableHTTPClientTransport } = await sdk('client/streamableHttp.js');
const { CallToolResultSchema, ElicitRequestSchema } = await sdk('types.js');

let passed = 0;
let failed = 0;
function check(name, cond, detail) {
  if (cond) {
    passed += 1;
    console.log(`ok - ${name}`);
  } else {
    failed += 1;
    console.log(`not ok - ${name}: ${JSON.stringify(detail)}`);
  }
}

async function connect(withElicitation) {
  const capabilities = withElicitation ? { elicitation: { form: {} } } : {};
  const client = new Client({ name: 'taskwire-ts-interop', version: '1.0.0' }, { capabilities });
  if (withElicitation) {
    client.setRequestHandler(ElicitRequestSchema, async (req) => ({
      action: 'accept',
      content: { answer: `ts:${req.params.message}` },
    }));
  }
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

async function drain(client, text) {
  const events = [];
  const stream = client.experimental.tasks.callToolStream(
    { name: 'run_script', arguments: { text } },
    CallToolResultSchema,
    { task: { ttl: 60000 } },
  );
  for await (const ev of stream) events.push(ev);
  return events;
}

try {
  const client = await connect(false);
  check('server declares tasks.requests.tools.call', !!client.getServerCapabilities()?.tasks?.requests?.tools?.call, client.getServerCapabilities());

  const tools = await client.listTools();
  const tool = tools.tools.find((t) => t.name === 'run_script');
  check('tools/list has run_script with taskSupport', tool?.execution?.taskSupport === 'optional', tool);

  // Call as a task, poll, get the result (callToolStream does all three).
  const events = await drain(client, 'hello from ts');
  const created = events.find((e) => e.type === 'taskCreated');
  const result = events.find((e) => e.type === 'result');
  check('call as task returns a task', !!created?.task?.taskId, events);
  check('polled result carries the echo', result?.result?.content?.[0]?.text === 'hello from ts', events);
  const taskId = created?.task?.taskId;

  // tasks/get and tasks/result directly.
  const got = await client.experimental.tasks.getTask(taskId);
  check('tasks/get says completed', got.status === 'completed', got);
  const res = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
  check('tasks/result returns the CallToolResult', res.content?.[0]?.text === 'hello from ts', res);

  // tasks/list.
  const list = await client.experimental.tasks.listTasks();
  check('tasks/list includes the task', list.tasks.some((t) => t.taskId === taskId), list);

  // Cancel a sleeping task.
  const sleeping = await client.request(
    { method: 'tools/call', params: { name: 'run_script', arguments: { text: 'sleep 20000' }, task: { ttl: 60000 } } },
    (await sdk('types.js')).CreateTaskResultSchema,
  );
  const cancelled = await client.experimental.tasks.cancelTask(sleeping.task.taskId);
  check('tasks/cancel returns the cancelled task', cancelled.status === 'cancelled', cancelled);

  // Unknown task id.
  let unknown;
  try {
    await client.experimental.tasks.getTask('0123456789abcdef0123456789abcdef');
  } catch (e) {
    unknown = e;
  }
  check('unknown task is -32602', unknown?.code === -32602, String(unknown));
  await client.close();

  // An ask answered through the elicitation tasks/result delivers over the stream.
  const eclient = await connect(true);
  const asked = await drain(eclient, 'ask Favourite colour?');
  const answer = asked.find((e) => e.type === 'result');
  check('ask answered by elicitation over tasks/result', answer?.result?.content?.[0]?.text === 'answer: ts:Favourite colour?', asked);
  // A plain (blocking) tools/call whose tool asks: the elicitation comes over the
  // call's own stream.
  const plain = await eclient.callTool({ name: 'run_script', arguments: { text: 'ask Pet?' } });
  check('blocking call answered by elicitation', plain?.content?.[0]?.text === 'answer: ts:Pet?', plain);
  await eclient.close();
} catch (e) {
  check('no exception', false, String(e?.stack ?? e));
}

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
