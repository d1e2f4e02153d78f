// The real-client suite: ferret driven by clients nobody here wrote, as a
// user would use them, over stdio and Streamable HTTP in each protocol era the
// client speaks. Every tool is called once to succeed and once to fail, and a
// PDF is read and grepped (cases.json); a failure passes only when its code
// and message reach the client's user. The official tasks client (ext-tasks,
// on the v2 SDK) starts a long grep as a task, polls it, and cancels another.
// Then Claude Code's `claude mcp add` / `claude mcp list`, with a throwaway
// HOME, must report ferret connected over stdio and HTTP, and Claude Code, its
// model a stand-in on loopback, makes every call and hands the model results
// that carry the data, or the error's code and message.
//
//   node tests/clients/run.mjs --ferret target/debug/ferret --modules .cache/clients/node_modules \
//     --python .cache/venv-clients/bin/python
//
// Binds only 127.0.0.1, stops every server it starts by its pid, and ends with
// "N passed, N failed".

import { spawn, spawnSync } from 'node:child_process';
import http from 'node:http';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const options = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, arg, i, all) => (arg.startsWith('--') ? [...pairs, [arg.slice(2), all[i + 1]]] : pairs), []),
);
const FERRET = resolve(options.ferret ?? 'target/debug/ferret');
const MODULES = resolve(options.modules ?? '.cache/clients/node_modules');
const PYTHON = options.python ? resolve(options.python) : undefined;
const ONLY = options.only; // run only the cells whose name contains this
const { cases } = JSON.parse(readFileSync(join(here, 'cases.json'), 'utf8'));
const treeSpec = JSON.parse(readFileSync(join(here, 'tree.json'), 'utf8'));
const work = mkdtempSync(join(tmpdir(), 'ferret-clients-'));
const CALL_TIMEOUT_MS = 30_000;

const importFrom = (spec) => import(pathToFileURL(createRequire(join(MODULES, 'x.js')).resolve(spec)).href);
const v1 = {
  ...(await importFrom('@modelcontextprotocol/sdk/types.js')),
  ...(await importFrom('@modelcontextprotocol/sdk/client/index.js')),
  ...(await importFrom('@modelcontextprotocol/sdk/client/stdio.js')),
  ...(await importFrom('@modelcontextprotocol/sdk/client/streamableHttp.js')),
};
const v2 = { ...(await importFrom('@modelcontextprotocol/client')), ...(await importFrom('@modelcontextprotocol/client/stdio')) };
// ESM only (its exports have no `require` condition): imported by the file its
// `./client` export names.
const extTasks = await import(pathToFileURL(join(MODULES, '@modelcontextprotocol/ext-tasks/dist/client/index.js')).href);
const inspectorBin = join(MODULES, '@modelcontextprotocol/inspector/clients/launcher/build/index.js');
const claudeBin = join(MODULES, `@anthropic-ai/claude-code-${process.platform}-${process.arch}`, 'claude');

// --- the tree and the server ---------------------------------------------------

/** A PDF whose pages hold these lines of ASCII text (Helvetica, uncompressed), with
 * the byte offsets its cross-reference table needs. */
function pdf(pages) {
  const objects = ['<< /Type /Catalog /Pages 2 0 R >>', null, '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>'];
  const kids = [];
  for (const text of pages) {
    const content = `BT /F1 12 Tf 72 720 Td (${text.replace(/[\\()]/g, (c) => `\\${c}`)}) Tj ET`;
    objects.push(`<< /Length ${content.length} >>\nstream\n${content}\nendstream`);
    objects.push(`<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${objects.length} 0 R >>`);
    kids.push(`${objects.length} 0 R`);
  }
  objects[1] = `<< /Type /Pages /Kids [${kids.join(' ')}] /Count ${pages.length} >>`;
  let out = '%PDF-1.4\n';
  const offsets = objects.map((body, i) => {
    const at = out.length;
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
    return at;
  });
  const xref = out.length;
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  out += offsets.map((at) => `${String(at).padStart(10, '0')} 00000 n \n`).join('');
  return `${out}trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
}

let cellCount = 0;
/** A fresh tree for one cell, and the `serve` arguments that serve it. */
function freshTree() {
  const base = join(work, `cell-${++cellCount}`);
  const dirs = { root: join(base, 'root'), located: join(base, 'located') };
  for (const [part, files] of Object.entries(treeSpec).filter(([k]) => k in dirs)) {
    for (const [rel, content] of Object.entries(files)) {
      mkdirSync(dirname(join(dirs[part], rel)), { recursive: true });
      writeFileSync(join(dirs[part], rel), typeof content === 'string' ? content : pdf(content.pdf));
    }
  }
  const args = ['serve', '--root', `${dirs.root}:rw`, '--locate-root', dirs.located, '--locate', 'allow', '--state-dir', join(base, 'state')];
  return { base, args };
}

const running = new Set();
/** The token `ferret serve ARGS` wants over HTTP, as `ferret token ARGS` prints
 * it: the one ferret generated into the cell's state folder. */
function tokenOf(args) {
  const r = spawnSync(FERRET, ['token', ...args.slice(1)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ferret token failed: ${r.stderr}`);
  return r.stdout.trim();
}

/** Start `ferret serve` over HTTP on a free loopback port, with its default
 * token (every HTTP client below sends it, as a user configures them). */
function startHttp(args) {
  return new Promise((resolveStart, reject) => {
    const child = spawn(FERRET, [...args, '--bind', '127.0.0.1:0'], { stdio: ['ignore', 'ignore', 'pipe'] });
    running.add(child);
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`ferret did not listen within 20 s:\n${seen}`)), 20_000);
    child.stderr.on('data', (chunk) => {
      seen += chunk;
      const m = seen.match(/listening on (http:\/\/127\.0\.0\.1:\d+\/mcp)/);
      if (m) {
        clearTimeout(timer);
        const token = tokenOf(args);
        resolveStart({ url: m[1], token, header: `Authorization: Bearer ${token}`, stop: () => stop(child) });
      }
    });
    child.on('exit', (code) => reject(new Error(`ferret exited (${code}) before listening:\n${seen}`)));
  });
}

function stop(child) {
  running.delete(child);
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.on('exit', () => {
      clearTimeout(kill);
      done();
    });
    child.kill('SIGTERM');
  });
}

// --- judging what a client shows -------------------------------------------------

const results = [];
/** One check: what the case expects against what the client showed (`seen`:
 * isError, structured, text, rpc {code, message}). */
function judge(cell, c, phase, seen) {
  const shown = seen.structured !== undefined ? JSON.stringify(seen.structured) : seen.text ?? '';
  let why = null;
  if (phase === 'ok') {
    if (seen.rpc) why = `JSON-RPC error ${seen.rpc.code}: ${seen.rpc.message}`;
    else if (seen.isError) why = `isError: ${seen.text}`;
    else if (![c.expect].flat().every((e) => shown.includes(e)))
      why = `${JSON.stringify(c.expect)} not all in ${shown.slice(0, 300)}`;
  } else if (c.jsonrpc !== undefined) {
    if (!seen.rpc) why = `expected JSON-RPC error ${c.jsonrpc}, got ${shown.slice(0, 300)}`;
    else if (seen.rpc.code !== null && seen.rpc.code !== c.jsonrpc) why = `JSON-RPC code ${seen.rpc.code}, not ${c.jsonrpc}`;
    else if (!/Example:/.test(seen.rpc.message)) why = `message lost: ${JSON.stringify(seen.rpc.message)}`;
  } else if (c.path_code !== undefined) {
    const err = seen.structured?.results?.[0]?.error;
    if (seen.rpc || seen.isError) why = `the whole call failed: ${seen.rpc?.message ?? seen.text}`;
    else if (seen.structured !== undefined ? err?.code !== c.path_code || !err?.message : !seen.text?.includes(c.path_code))
      why = `per-path ${c.path_code} not shown: ${shown.slice(0, 300)}`;
  } else {
    const err = seen.structured?.error;
    if (seen.rpc) why = `JSON-RPC error ${seen.rpc.code} instead of the tool's: ${seen.rpc.message}`;
    else if (!seen.isError) why = `not an error: ${shown.slice(0, 300)}`;
    else if (seen.structured !== undefined && (err?.code !== c.code || !seen.text?.includes(err.message)))
      why = `code ${err?.code} / message ${JSON.stringify(err?.message)} not as expected in ${JSON.stringify(seen.text)}`;
    else if (!seen.text?.startsWith(`${c.code}: `) || seen.text.length <= c.code.length + 2)
      why = `the user sees ${JSON.stringify(seen.text)}, not ${c.code} and its message`;
  }
  results.push({ cell, check: `${c.tool} ${phase}`, pass: why === null, why });
}

const textOf = (content) => (content ?? []).filter((b) => b.type === 'text').map((b) => b.text).join('\n');

/** Every case through an SDK client's callTool. */
async function callAll(cell, client) {
  for (const c of cases) {
    for (const phase of ['ok', 'error']) {
      let seen;
      try {
        const r = await client.callTool({ name: c.tool, arguments: c[phase] }, undefined, { timeout: CALL_TIMEOUT_MS });
        seen = { isError: r.isError === true, structured: r.structuredContent, text: textOf(r.content) };
      } catch (e) {
        seen = { rpc: { code: e.code, message: String(e.message ?? e) } };
      }
      judge(cell, c, phase, seen);
    }
  }
}

function check(cell, name, ok, why) {
  results.push({ cell, check: name, pass: ok, why: ok ? null : why });
}

// --- the cells -----------------------------------------------------------------------

/** TypeScript SDK v1 (handshake era only) or v2 (`legacy`, or pinned 2026-07-28). */
async function sdkCell(sdk, transport, era) {
  const cell = `ts-sdk-${sdk} ${transport} ${era}`;
  const { args } = freshTree();
  const lib = sdk === 'v1' ? v1 : v2;
  const server = transport === 'http' ? await startHttp(args) : null;
  const clientTransport =
    transport === 'http'
      ? new lib.StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: { Authorization: `Bearer ${server.token}` } } })
      : new lib.StdioClientTransport({ command: FERRET, args: [...args, '--stdio'], stderr: 'ignore' });
  const negotiation = era === '2026-07-28' ? { versionNegotiation: { mode: { pin: era } } } : {};
  const client = new lib.Client({ name: 'ferret-client-suite', version: '1.0.0' }, negotiation);
  try {
    await client.connect(clientTransport);
    check(cell, 'connect', client.getServerVersion()?.name === 'ferret', `server says ${JSON.stringify(client.getServerVersion())}`);
    if (sdk === 'v2') {
      const version = client.getNegotiatedProtocolVersion();
      check(cell, 'era', era === '2026-07-28' ? version === era : version < '2026-07-28', `negotiated ${version}`);
    }
    await client.listTools(); // as hosts do: it also loads the output schemas the SDK checks results against
    await callAll(cell, client);
  } catch (e) {
    check(cell, 'session', false, String(e?.stack ?? e));
  } finally {
    await client.close().catch(() => {});
    await server?.stop();
  }
}

/** ferret started with no --root by a TypeScript SDK client (v1 or v2) that
 * offers MCP roots, in a folder of its own: the client's root is served (not
 * the folder); after roots/list_changed the new root is searchable within 5 s
 * and the dropped one refused from the next call. */
async function clientRootsCell(sdk) {
  const cell = `ts-sdk-${sdk} stdio client roots`;
  const lib = sdk === 'v1' ? v1 : v2;
  const { base } = freshTree();
  const first = join(base, 'root');
  const second = join(base, 'second');
  const elsewhere = join(base, 'elsewhere');
  mkdirSync(join(second, 'lib'), { recursive: true });
  writeFileSync(join(second, 'lib', 'second_marker.txt'), 'second\n');
  mkdirSync(elsewhere);
  writeFileSync(join(elsewhere, 'elsewhere_marker.txt'), 'not served\n');
  let listed = [first];
  const client = new lib.Client({ name: 'ferret-client-suite', version: '1.0.0' }, { capabilities: { roots: { listChanged: true } } });
  const answer = async () => ({ roots: listed.map((p) => ({ uri: pathToFileURL(p).href })) });
  client.setRequestHandler(sdk === 'v1' ? v1.ListRootsRequestSchema : 'roots/list', answer);
  const transport = new lib.StdioClientTransport({
    command: FERRET,
    args: ['serve', '--stdio', '--state-dir', join(base, 'state')],
    cwd: elsewhere,
    stderr: 'ignore',
  });
  const paths = async (query) => {
    const r = await client.callTool({ name: 'search', arguments: { query } }, undefined, { timeout: CALL_TIMEOUT_MS });
    return (r.structuredContent?.results ?? []).map((h) => (typeof h === 'string' ? h : h.path));
  };
  try {
    await client.connect(transport);
    const found = await paths('readme');
    check(cell, 'client root served', found.includes('readme.txt'), `search readme: ${JSON.stringify(found)}`);
    const notHere = await paths('elsewhere_marker');
    check(cell, 'start folder not served', notHere.length === 0, JSON.stringify(notHere));
    listed = [second];
    await client.sendRootsListChanged();
    const started = Date.now();
    const dropped = await client.callTool({ name: 'read', arguments: { path: 'readme.txt' } }, undefined, { timeout: CALL_TIMEOUT_MS });
    check(cell, 'dropped root refused at once', dropped.isError === true && dropped.structuredContent?.error?.code === 'NOT_FOUND', JSON.stringify(dropped.structuredContent));
    let got = [];
    while (Date.now() - started < 5000 && !got.includes('lib/second_marker.txt')) {
      got = await paths('second_marker');
      if (!got.includes('lib/second_marker.txt')) await new Promise((r) => setTimeout(r, 100));
    }
    check(cell, 'new root searchable within 5 s', got.includes('lib/second_marker.txt'), `after ${Date.now() - started} ms: ${JSON.stringify(got)}`);
  } catch (e) {
    check(cell, 'session', false, String(e?.stack ?? e));
  } finally {
    await client.close().catch(() => {});
  }
}

/** The Inspector CLI (one process a call, no roots) and fastmcp (with roots)
 * start ferret with no --root: the Inspector's calls are served from the folder
 * it starts in, fastmcp's from the root it names. */
async function noRootCells(which) {
  const cell = `${which} stdio no root`;
  const { base } = freshTree();
  const project = join(base, 'root');
  const elsewhere = join(base, 'elsewhere');
  mkdirSync(elsewhere);
  const searched = (structured) => (structured?.results ?? []).map((h) => (typeof h === 'string' ? h : h.path));
  if (which === 'inspector-cli') {
    const r = await run(
      process.execPath,
      [inspectorBin, '--cli', '--format', 'json', '--method', 'tools/call', '--tool-name', 'search', '--tool-args-json', JSON.stringify({ query: 'readme' }), '--', FERRET, 'serve', '--stdio', '--state-dir', join(base, 'state')],
      { cwd: project },
    );
    const found = searched(lastJson(r.stdout)?.result?.structuredContent);
    check(cell, 'the folder it starts in is served', found.includes('readme.txt'), `exit ${r.code}: ${JSON.stringify(found)} ${r.stderr.slice(0, 300)}`);
    return;
  }
  const r = await run(PYTHON, [join(here, 'fastmcp_roots.py'), JSON.stringify({ command: FERRET, args: ['serve', '--stdio', '--state-dir', join(base, 'state')], cwd: elsewhere, root: project })], { timeout: 120_000 });
  const report = lastJson(r.stdout);
  check(cell, 'its root is served, not the folder it starts in', report && report.found.includes('readme.txt') && report.roots_from === 'client', `exit ${r.code}: ${JSON.stringify(report)} ${r.stderr.slice(-600)}`);
}

/** Claude Code with ferret added once for every project, no --root (`claude
 * mcp add --scope user ferret -- ferret serve --stdio`), run in a project
 * folder: the model's search finds that project's file. */
async function claudeNoRootCell() {
  const cell = 'claude-code no root stdio';
  const { base } = freshTree();
  const project = join(base, 'root');
  const home = join(base, 'home');
  mkdirSync(home);
  const calls = [{ tool: 'search', args: { query: 'readme' } }];
  const model = await standInModel(calls);
  const env = { ...claudeEnv(home, model), XDG_STATE_HOME: join(base, 'state') };
  try {
    const claude = (extra) => run(claudeBin, extra, { env, timeout: 180_000, cwd: project });
    const added = await claude(['mcp', 'add', '--scope', 'user', 'ferret', '--', FERRET, 'serve', '--stdio']);
    check(cell, 'mcp add --scope user', added.code === 0, added.stderr + added.stdout);
    const session = await claude(['-p', 'Use the ferret tools as asked.', '--allowedTools', 'mcp__ferret']);
    const result = model.seen[0]?.result;
    const text = result ? (typeof result.content === 'string' ? result.content : textOf(result.content)) : '';
    check(cell, 'search finds the project file', session.code === 0 && text.includes('readme.txt') && result.is_error !== true, `exit ${session.code}: ${text.slice(0, 400)} ${session.stderr.slice(-400)}`);
  } finally {
    model.close();
  }
}

/** Claude Code reads a 5 MB log through ferret with defaults: the model gets
 * the window itself, whole (no `<persisted-output>` preview and file path),
 * and where to go on (`next_start_line`). */
async function claudeBigReadCell() {
  const cell = 'claude-code read of a 5 MB log';
  const { base, args } = freshTree();
  const line = '2026-12-02T04:00:00Z INFO request served path=/api/v1/items status=200 ms=12\n';
  writeFileSync(join(base, 'root', 'big.log'), line.repeat(Math.ceil(5_000_000 / line.length)));
  const home = join(base, 'home');
  mkdirSync(home);
  const model = await standInModel([{ tool: 'read', args: { path: 'big.log' } }]);
  const env = claudeEnv(home, model);
  try {
    const claude = (extra) => run(claudeBin, extra, { env, timeout: 180_000 });
    const added = await claude(['mcp', 'add', 'ferret', '--', FERRET, ...args, '--stdio']);
    check(cell, 'mcp add', added.code === 0, added.stderr + added.stdout);
    const session = await claude(['-p', 'Use the ferret tools as asked.', '--allowedTools', 'mcp__ferret']);
    const result = model.seen[0]?.result;
    const text = result ? (typeof result.content === 'string' ? result.content : textOf(result.content)) : '';
    check(cell, 'session', session.code === 0 && result !== undefined, `exit ${session.code}: ${session.stderr.slice(-400)}`);
    check(cell, 'window handed whole', text.length > 20_000 && !text.includes('persisted-output'), `${text.length} characters: ${text.slice(0, 300)}`);
    check(cell, 'says where to go on', /next_start_line"?\s*:\s*\d+/.test(text), text.slice(-400));
  } finally {
    model.close();
  }
}

/** The official tasks client (`@modelcontextprotocol/ext-tasks`) on the v2 SDK,
 * 2026-07-28 over HTTP: a long grep started as a task, its polls seen, its
 * result settled; another cancelled, and seen to stop with its partial result. */
async function tasksCell() {
  const cell = 'ext-tasks + ts-sdk-v2 http 2026-07-28';
  const { base, args } = freshTree();
  // Enough text that a grep every line of which matches runs for seconds.
  const chunk = 'the quick brown fox jumps over the lazy dog 0123456789\n'.repeat(19_000);
  for (let i = 0; i < 120; i++) {
    mkdirSync(join(base, 'root', 'big', `d${i % 6}`), { recursive: true });
    writeFileSync(join(base, 'root', 'big', `d${i % 6}`, `f${i}.txt`), chunk);
  }
  const server = await startHttp([...args, '--task-after', '0']);
  const era = '2026-07-28';
  const client = new v2.Client({ name: 'ferret-client-suite', version: '1.0.0' }, { versionNegotiation: { mode: { pin: era } } });
  // The request path ext-tasks needs for 2026-07-28 task wire shapes: plain
  // JSON-RPC over the same endpoint, with the routing headers SEP-2663 asks for.
  let nextId = 1;
  const rawDispatch = async (request, options = {}) => {
    const body = { jsonrpc: '2.0', id: `tasks-${nextId++}`, ...request };
    const headers = new Headers({
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': era,
      'mcp-method': request.method,
      authorization: `Bearer ${server.token}`,
    });
    const routed = request.params?.name ?? request.params?.taskId;
    if (routed !== undefined) headers.set('mcp-name', String(routed));
    // ext-tasks sends its own routing headers too: its values win.
    for (const [name, value] of Object.entries(options.context?.headers ?? {})) headers.set(name, value);
    const response = await fetch(server.url, { method: 'POST', headers, body: JSON.stringify(body), signal: options.signal });
    const raw = await response.text();
    const message = response.headers.get('content-type')?.includes('text/event-stream')
      ? raw.split('\n').filter((l) => l.startsWith('data:')).map((l) => JSON.parse(l.slice(5))).find((m) => m.id === body.id)
      : JSON.parse(raw);
    return message.error ? { kind: 'error', error: message.error } : { kind: 'result', result: message.result };
  };
  const slow = { pattern: '\\w+o\\w+', output: 'count', path: 'big' };
  let session;
  try {
    await client.connect(new v2.StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: { Authorization: `Bearer ${server.token}` } } }));
    session = extTasks.createTaskSessionFromClient(client, {
      endpointId: `ferret-${server.url}`,
      rawDispatch,
      v2RequestFraming: { protocolVersion: era, clientInfo: { name: 'ferret-client-suite', version: '1.0.0' }, clientCapabilities: {} },
      tools: { currentTool: () => undefined },
    });
    // 1. A long grep, as a task: polled until it settles with the whole answer.
    const polled = [];
    const long = await session.callTool('grep', slow);
    check(cell, 'grep answers with a task', long.kind === 'task', `kind ${long.kind}`);
    const { outcome } = await long.settle({ onEvent: (e) => e.type === 'task' && polled.push(e.task.status) });
    const result = outcome.status === 'completed' ? outcome.result : undefined;
    check(cell, 'the task was polled while it worked', polled.includes('working'), `statuses seen: ${polled.join(', ')}`);
    check(cell, 'the settled task carries the grep result', result?.structuredContent?.files_scanned === 120 && result?.isError !== true,
      `${outcome.status}: ${JSON.stringify(result?.structuredContent ?? outcome).slice(0, 300)}`);
    // 2. Another, cancelled while it runs: it stops, keeping what it found.
    const other = await session.callTool('grep', slow);
    check(cell, 'a second grep answers with a task', other.kind === 'task', `kind ${other.kind}`);
    const controller = session.task(other.handle?.taskId);
    for (let t = Date.now(); Date.now() - t < 20_000; ) {
      if (/^[1-9]\d* of/.test((await controller.snapshot()).statusMessage ?? '')) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    await other.cancel();
    let ended;
    for (let t = Date.now(); Date.now() - t < 10_000; ) {
      ended = (await controller.snapshot()).raw;
      if (ended.status !== 'working') break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const partial = ended?.result?.structuredContent;
    check(cell, 'tasks/cancel stops it with its partial result',
      ended?.status === 'completed' && partial?.error?.code === 'CANCELLED' && partial.files_scanned > 0 && partial.files_scanned < 120,
      JSON.stringify(ended ?? {}).slice(0, 400));
    await other.close().catch(() => {});
  } catch (e) {
    check(cell, 'session', false, String(e?.stack ?? e));
  } finally {
    await session?.close().catch(() => {});
    await client.close().catch(() => {});
    await server.stop();
  }
}

function run(command, args, { env, timeout = 60_000, cwd } = {}) {
  return new Promise((done) => {
    const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], cwd });
    running.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeout);
    child.on('exit', (code) => {
      clearTimeout(timer);
      running.delete(child);
      done({ code, stdout, stderr });
    });
  });
}

/** The Inspector CLI: one process per call, as a user runs it. */
async function inspectorCell(transport, era) {
  const cell = `inspector-cli ${transport} ${era}`;
  const { args } = freshTree();
  const server = transport === 'http' ? await startHttp(args) : null;
  const target = transport === 'http' ? [server.url] : ['--', FERRET, ...args, '--stdio'];
  const header = transport === 'http' ? ['--header', server.header] : [];
  const inspect = (extra) =>
    run(process.execPath, [inspectorBin, '--cli', ...header, '--format', 'json', '--protocol-era', era, ...extra, ...target]);
  try {
    const listed = await inspect(['--strict', '--method', 'tools/list']);
    const tools = listed.code === 0 ? JSON.parse(listed.stdout) : undefined;
    const toolCount = new Set(cases.map((c) => c.tool)).size;
    check(cell, 'tools/list', tools?.result?.tools?.length === toolCount, `exit ${listed.code}: ${listed.stderr.slice(0, 500)}`);
    check(cell, 'schemas portable (--strict)', tools !== undefined && !tools.schemaFindings, JSON.stringify(tools?.schemaFindings)?.slice(0, 500));
    for (const c of cases) {
      for (const phase of ['ok', 'error']) {
        const r = await inspect(['--method', 'tools/call', '--tool-name', c.tool, '--tool-args-json', JSON.stringify(c[phase])]);
        const out = lastJson(r.stdout);
        const err = lastJson(r.stderr)?.error;
        let seen;
        if (out?.result) seen = { isError: out.result.isError === true, structured: out.result.structuredContent, text: textOf(out.result.content) };
        // The Inspector prints a JSON-RPC error as {"error": {"code": "error",
        // message}}: its own envelope has no place for the number.
        else seen = { rpc: { code: typeof err?.code === 'number' ? err.code : null, message: err?.message ?? r.stderr.slice(0, 300) } };
        judge(cell, c, phase, seen);
      }
    }
  } finally {
    await server?.stop();
  }
}

function lastJson(text) {
  for (const line of text.trim().split('\n').reverse()) {
    try {
      return JSON.parse(line);
    } catch {
      // not a JSON line (a banner)
    }
  }
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** fastmcp's Client, through tests/clients/fastmcp_cell.py (it reports what the
 * client showed; the judging is the same as for every other client). */
async function fastmcpCell(transport, era) {
  const cell = `fastmcp ${transport} ${era}`;
  const { args } = freshTree();
  const server = transport === 'http' ? await startHttp(args) : null;
  try {
    const target = transport === 'http' ? { url: server.url, token: server.token } : { command: FERRET, args: [...args, '--stdio'] };
    const r = await run(PYTHON, [join(here, 'fastmcp_cell.py'), JSON.stringify({ ...target, mode: era, cases })], { timeout: 120_000 });
    const report = lastJson(r.stdout);
    if (!report) {
      check(cell, 'session', false, `exit ${r.code}: ${r.stderr.slice(-1500)}`);
      return;
    }
    check(cell, 'era', era === '2026-07-28' ? report.version === era : report.version < '2026-07-28', `negotiated ${report.version}`);
    check(cell, 'results parsed against output schemas', report.parse_errors.length === 0, report.parse_errors.join('; ').slice(0, 800));
    for (const { index, phase, seen } of report.calls) judge(cell, cases[index], phase, seen);
  } finally {
    await server?.stop();
  }
}

/** Claude Code: `claude mcp add` for stdio and HTTP, then `claude mcp list`. */
async function claudeCell() {
  const cell = 'claude-code mcp add/list';
  const { base, args } = freshTree();
  const home = join(base, 'home');
  mkdirSync(home);
  const env = { HOME: home, DISABLE_TELEMETRY: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1' };
  const server = await startHttp(args);
  try {
    const claude = (extra) => run(claudeBin, extra, { env, timeout: 90_000 });
    const added = [
      await claude(['mcp', 'add', 'ferret-stdio', '--', FERRET, ...args, '--stdio']),
      await claude(['mcp', 'add', '--transport', 'http', 'ferret-http', server.url, '--header', server.header]),
    ];
    check(cell, 'mcp add', added.every((r) => r.code === 0), added.map((r) => r.stderr + r.stdout).join('\n'));
    const listed = await claude(['mcp', 'list']);
    for (const name of ['ferret-stdio', 'ferret-http']) {
      const line = listed.stdout.split('\n').find((l) => l.startsWith(`${name}:`)) ?? '';
      check(cell, `${name} connected`, /Connected/.test(line) && !/Failed/.test(line), `mcp list said: ${listed.stdout}${listed.stderr}`);
    }
  } finally {
    await server.stop();
  }
}

/** Claude Code's environment for a cell: a throwaway HOME, its model the
 * stand-in, every ferret tool in the request (not behind a search tool), and
 * nothing sent anywhere else. */
function claudeEnv(home, model) {
  return {
    HOME: home,
    ANTHROPIC_BASE_URL: model.url,
    ANTHROPIC_API_KEY: 'stand-in',
    ENABLE_TOOL_SEARCH: 'false',
    DISABLE_TELEMETRY: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
  };
}

/** A stand-in for the model endpoint Claude Code talks to (the Messages API,
 * streamed), on loopback: it asks for each case's tool call in turn and keeps
 * the tool results Claude Code sends back, which are what a model would read. */
function standInModel(calls) {
  const seen = [];
  let next = 0;
  const events = (res, message, blocks, stop) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const send = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
    send('message_start', { message: { ...message, content: [], stop_reason: null, usage: { input_tokens: 1, output_tokens: 1 } } });
    blocks.forEach((block, index) => {
      if (block.type === 'tool_use') {
        send('content_block_start', { index, content_block: { ...block, input: {} } });
        send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) } });
      } else {
        send('content_block_start', { index, content_block: { type: 'text', text: '' } });
        send('content_block_delta', { index, delta: { type: 'text_delta', text: block.text } });
      }
      send('content_block_stop', { index });
    });
    send('message_delta', { delta: { stop_reason: stop }, usage: { output_tokens: 1 } });
    send('message_stop', {});
    res.end();
  };
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      let request = {};
      try {
        request = JSON.parse(body);
      } catch {
        // not JSON: answered as a count below
      }
      if (!req.url.startsWith('/v1/messages') || req.url.includes('count_tokens') || !request.messages) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ input_tokens: 1 }));
        return;
      }
      // Results may sit before other parts of the turn (reminders Claude Code
      // adds): look through every message for results not yet seen.
      for (const m of request.messages) {
        for (const block of Array.isArray(m.content) ? m.content : []) {
          const n = Number(String(block.tool_use_id ?? '').replace('toolu_', ''));
          if (block.type === 'tool_result' && !seen.some((x) => x.result.tool_use_id === block.tool_use_id) && calls[n - 1])
            seen.push({ call: calls[n - 1], result: block });
        }
      }
      const message = { id: `msg_${seen.length}_${next}`, type: 'message', role: 'assistant', model: request.model };
      const ours = (request.tools ?? []).some((t) => t.name.startsWith('mcp__ferret__'));
      if (ours && next < calls.length) {
        const { tool, args } = calls[next++];
        events(res, message, [{ type: 'tool_use', id: `toolu_${next}`, name: `mcp__ferret__${tool}`, input: args }], 'tool_use');
      } else {
        events(res, message, [{ type: 'text', text: 'done' }], 'end_turn');
      }
    });
  });
  return new Promise((ready) =>
    server.listen(0, '127.0.0.1', () => ready({ url: `http://127.0.0.1:${server.address().port}`, seen, close: () => server.close() })),
  );
}

/** Claude Code in print mode, its model a stand-in: every case's tool call goes
 * through Claude Code to ferret, and the tool result it hands the model must
 * carry the data (success) or the error's code and message (failure). */
async function claudeCallsCell(transport) {
  const cell = `claude-code tool calls ${transport}`;
  const { base, args } = freshTree();
  const home = join(base, 'home');
  mkdirSync(home);
  const calls = cases.flatMap((c) => ['ok', 'error'].map((phase) => ({ tool: c.tool, args: c[phase], phase, c })));
  const model = await standInModel(calls);
  const server = transport === 'http' ? await startHttp(args) : null;
  const env = claudeEnv(home, model);
  try {
    const claude = (extra, options = {}) => run(claudeBin, extra, { env, timeout: 180_000, ...options });
    const add =
      transport === 'http' ? ['--transport', 'http', 'ferret', server.url, '--header', server.header] : ['ferret', '--', FERRET, ...args, '--stdio'];
    const added = await claude(['mcp', 'add', ...add]);
    check(cell, 'mcp add', added.code === 0, added.stderr + added.stdout);
    const session = await claude(['-p', 'Use the ferret tools as asked.', '--allowedTools', 'mcp__ferret']);
    check(cell, 'session', session.code === 0 && model.seen.length === calls.length, `exit ${session.code}, ${model.seen.length} of ${calls.length} results: ${session.stderr.slice(-800)}`);
    for (const { call, result } of model.seen) {
      const text = typeof result.content === 'string' ? result.content : textOf(result.content);
      let structured;
      try {
        structured = JSON.parse(text);
      } catch {
        // not the structured form: judged as text
      }
      const c = call.c;
      let seen;
      if (c.jsonrpc !== undefined && call.phase === 'error') {
        const code = text.match(/-32\d{3}/)?.[0];
        seen = { rpc: { code: code ? Number(code) : null, message: text } };
      } else if (structured && typeof structured === 'object' && !Array.isArray(structured)) {
        // What the model reads is the structured content as JSON: the error's
        // text must be in it too (its message), as the judge checks for text.
        const err = structured.error;
        seen = { isError: result.is_error === true, structured, text: err ? `${err.code}: ${err.message}` : text };
      } else {
        seen = { isError: result.is_error === true, text };
      }
      judge(cell, c, call.phase, seen);
    }
  } finally {
    model.close();
    await server?.stop();
  }
}

// --- the matrix ------------------------------------------------------------------------

const cells = [
  ['ts-sdk-v1 stdio legacy', () => sdkCell('v1', 'stdio', 'legacy')],
  ['ts-sdk-v1 http legacy', () => sdkCell('v1', 'http', 'legacy')],
  ...['stdio', 'http'].flatMap((t) =>
    ['legacy', '2026-07-28'].map((e) => [`ts-sdk-v2 ${t} ${e}`, () => sdkCell('v2', t, e)]),
  ),
  ['ext-tasks + ts-sdk-v2 http 2026-07-28', tasksCell],
  ['ts-sdk-v1 stdio client roots', () => clientRootsCell('v1')],
  ['ts-sdk-v2 stdio client roots', () => clientRootsCell('v2')],
  ['inspector-cli stdio no root', () => noRootCells('inspector-cli')],
  ...(PYTHON ? [['fastmcp stdio no root', () => noRootCells('fastmcp')]] : []),
  ...['stdio', 'http'].flatMap((t) => ['legacy', 'auto', 'modern'].map((e) => [`inspector-cli ${t} ${e}`, () => inspectorCell(t, e)])),
  ...(PYTHON
    ? ['stdio', 'http'].flatMap((t) => ['legacy', '2026-07-28'].map((e) => [`fastmcp ${t} ${e}`, () => fastmcpCell(t, e)]))
    : []),
  ['claude-code mcp add/list', claudeCell],
  ['claude-code tool calls stdio', () => claudeCallsCell('stdio')],
  ['claude-code tool calls http', () => claudeCallsCell('http')],
  ['claude-code no root stdio', claudeNoRootCell],
  ['claude-code read of a 5 MB log', claudeBigReadCell],
].filter(([name]) => !ONLY || name.includes(ONLY));

const started = Date.now();
try {
  for (const [name, cellRun] of cells) {
    const before = results.length;
    const t0 = Date.now();
    try {
      await cellRun();
    } catch (e) {
      check(name, 'cell', false, String(e?.stack ?? e));
    }
    const mine = results.slice(before);
    const failed = mine.filter((r) => !r.pass);
    console.log(`${failed.length ? 'FAIL' : 'pass'}  ${name.padEnd(34)} ${mine.length - failed.length}/${mine.length} checks  ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    for (const f of failed) console.log(`        ${f.check}: ${f.why}`);
  }
} finally {
  await Promise.all([...running].map(stop));
  rmSync(work, { recursive: true, force: true });
}
const failed = results.filter((r) => !r.pass).length;
console.log(`real clients: ${cells.length} cells in ${((Date.now() - started) / 1000).toFixed(0)} s`);
console.log(`${results.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
