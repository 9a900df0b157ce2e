// BullMQ for Node, driven by peer_jobs/bullmq_node.py: the same job (one INCR of the counter, or
// push the time for the latency phase) and the same queue as the Python peers.
//
//   node bullmq_node.js worker [CONCURRENCY]   a Worker until SIGTERM (concurrency: BullMQ's default, 1)
//   node bullmq_node.js client                 reads JSON commands on stdin, answers one line each:
//       {"op": "dispatch", "n": N}  N x queue.add()       {"op": "bulk", "n": N}  queue.addBulk()
//       {"op": "stamp"}  one queue.add(), answering the wall-clock time just before the call
//
// bullmq comes from NODE_PATH (the benchmark's throwaway npm directory), never from the project.
"use strict";

const { Queue, Worker } = require("bullmq");
const IORedis = require("ioredis");
const readline = require("readline");

const url = new URL(process.env.BENCH_REDIS_URL || "redis://127.0.0.1:6379/12");
const connection = {
  host: url.hostname,
  port: Number(url.port || 6379),
  db: Number(url.pathname.slice(1) || 0),
  maxRetriesPerRequest: null,
};
const COUNTER = "bench:counter";
const STAMPS = "bench:stamps";
const QUEUE = "bench";

function now() {
  return (performance.timeOrigin + performance.now()) / 1000;
}

async function worker(concurrency) {
  const redis = new IORedis(connection);
  const opts = { connection };
  if (concurrency) opts.concurrency = concurrency;
  const w = new Worker(QUEUE, async (job) => {
    if (job.name === "incr") await redis.incr(COUNTER);
    else if (job.name === "stamp") await redis.rpush(STAMPS, String(now()));
  }, opts);
  const stop = async () => {
    await w.close();
    await redis.quit();
    process.exit(0);
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

async function client() {
  const queue = new Queue(QUEUE, { connection });
  await queue.waitUntilReady();
  const lines = readline.createInterface({ input: process.stdin });
  for await (const line of lines) {
    const command = JSON.parse(line);
    let answer = { ok: true };
    if (command.op === "dispatch") {
      for (let i = 0; i < command.n; i++) await queue.add("incr", {});
    } else if (command.op === "bulk") {
      const jobs = [];
      for (let i = 0; i < command.n; i++) jobs.push({ name: "incr", data: {} });
      await queue.addBulk(jobs);
    } else if (command.op === "stamp") {
      const sent = now();
      await queue.add("stamp", {});
      answer = { sent };
    }
    process.stdout.write(JSON.stringify(answer) + "\n");
  }
  await queue.close();
  process.exit(0);
}

const [mode, concurrency] = process.argv.slice(2);
(mode === "worker" ? worker(Number(concurrency) || 0) : client()).catch((err) => {
  console.error(String(err && err.stack || err));
  process.exit(1);
});
