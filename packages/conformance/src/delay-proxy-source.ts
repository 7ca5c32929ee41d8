/**
 * The forwarder of `createNetworkNamespaces` (netns.ts), as the source of a plain Node script it
 * runs with `node -e` in its own process, so its relaying never shares an event loop with the
 * workers or the test it serves. Configured by the environment variable `BELAY_DELAY_PROXY`
 * (JSON `{ listen: [{ host, port }], upstream: { path } | { host, port }, delayMs }`); prints
 * `listening [port, …]` once every listener is bound; exits when its stdin closes (the parent
 * is gone) or on SIGTERM.
 *
 * With `delayMs` > 0 it is a userspace delay proxy: every chunk read from either side is written
 * to the other `delayMs` after it arrived (in order, one timer per direction), which adds
 * `delayMs` to each direction of every round trip like netem's `delay` would — but in userspace,
 * so the added time is at least `delayMs` and grows with the proxy's own scheduling lag.
 */
export const DELAY_PROXY_SOURCE = String.raw`
"use strict";
const net = require("node:net");
const { performance } = require("node:perf_hooks");
const cfg = JSON.parse(process.env.BELAY_DELAY_PROXY);
const delay = Number(cfg.delayMs);
const HIGH_WATER = 4 * 1024 * 1024;

function relay(from, to) {
  if (!(delay > 0)) {
    from.pipe(to);
    return;
  }
  let queue = [];
  let head = 0;
  let queued = 0;
  let timer = null;
  const arm = () => {
    timer = setTimeout(flush, Math.max(1, queue[head].due - performance.now()));
  };
  const flush = () => {
    timer = null;
    const t = performance.now();
    to.cork();
    // Within 0.2 ms counts as due: timers fire on whole milliseconds.
    while (head < queue.length && queue[head].due <= t + 0.2) {
      const item = queue[head++];
      if (item.chunk === null) to.end();
      else {
        queued -= item.chunk.length;
        to.write(item.chunk);
      }
    }
    to.uncork();
    if (head === queue.length) {
      queue = [];
      head = 0;
    } else arm();
    if (queued < HIGH_WATER && from.isPaused()) from.resume();
  };
  from.on("data", (chunk) => {
    queue.push({ due: performance.now() + delay, chunk });
    queued += chunk.length;
    if (timer === null) arm();
    if (queued >= HIGH_WATER) from.pause();
  });
  from.on("end", () => {
    queue.push({ due: performance.now() + delay, chunk: null });
    if (timer === null) arm();
  });
}

function serve(socket) {
  socket.setNoDelay(true);
  const upstream = cfg.upstream.path ? net.connect(cfg.upstream.path) : net.connect(cfg.upstream.port, cfg.upstream.host);
  if (!cfg.upstream.path) upstream.setNoDelay(true);
  const kill = () => {
    socket.destroy();
    upstream.destroy();
  };
  socket.on("error", kill);
  upstream.on("error", kill);
  socket.on("close", kill);
  upstream.on("close", kill);
  relay(socket, upstream);
  relay(upstream, socket);
}

Promise.all(
  cfg.listen.map(
    (l) =>
      new Promise((resolve, reject) => {
        const server = net.createServer(serve);
        server.on("error", reject);
        server.listen(l.port, l.host, () => resolve(server.address().port));
      }),
  ),
).then(
  (ports) => process.stdout.write("listening " + JSON.stringify(ports) + "\n"),
  (error) => {
    process.stderr.write("listen failed: " + error.message + "\n");
    process.exit(1);
  },
);
process.stdin.on("data", () => {});
process.stdin.on("end", () => process.exit(0));
process.on("SIGTERM", () => process.exit(0));
`;
