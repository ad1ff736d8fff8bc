import assert from "node:assert/strict";
import { test } from "node:test";
import { RequestThread } from "./request-thread.ts";

const fixture = new URL("../../test/fixtures/square-thread", import.meta.url);

test("a request thread answers in order, follows its control messages, and leaves what it fails on (or everything, once gone) to the caller", async () => {
  const t = new RequestThread<number, number>(fixture, undefined);
  assert.deepEqual(await Promise.all([1, 2, 3].map((n) => t.request(n))), [1, 4, 9]);
  t.control({ offset: 100 });
  assert.deepEqual(await Promise.all([t.request(-1), t.request(4)]), [null, 116]);
  assert.equal(t.answered, 4);
  const pending = t.request(5);
  t.close();
  assert.equal(await pending, null);
  assert.equal(await t.request(6), null);
  assert.equal(t.running, false);
  // A thread that cannot start answers nothing, and nothing waits for it.
  const missing = new RequestThread<number, number>(new URL("./no-such-thread", import.meta.url), undefined);
  assert.equal(await missing.request(1), null);
  missing.close();
});

test("a request whose body does not copy to the thread is left to the caller, and waits for nothing", async () => {
  const t = new RequestThread<unknown, number>(fixture, undefined);
  assert.equal(await t.request(() => 1), null);
  assert.equal(await t.request(3), 9);
  // One that does not copy among others made with it: the others are answered.
  assert.deepEqual(await Promise.all([t.request(2), t.request(() => 1), t.request(4)]), [4, null, 16]);
  t.close();
});

test("requests made in one run of code go to the thread in one message, in order with control messages", async () => {
  const t = new RequestThread<number, number>(fixture, undefined);
  assert.equal(await t.request(1000), 1, "the first message");
  const together = [1, 2, 3, 4, 5, 6].map((n) => t.request(n));
  assert.deepEqual(await Promise.all(together), [1, 4, 9, 16, 25, 36]);
  assert.equal(await t.request(1000), 3, "six requests in one message, then this one");
  // A slow answer is sent as soon as it is made, not with the rest of its batch.
  const slow = t.request(2000);
  let nextDone = false;
  void t.request(2001).then(() => {
    nextDone = true;
  });
  assert.equal(await slow, 2000);
  await Promise.resolve();
  await Promise.resolve();
  assert.equal(nextDone, false, "the second was still being worked out when the first came");
  const before = t.request(2);
  t.control({ offset: 10 }); // sends the request made before it first
  const after = t.request(2);
  assert.deepEqual(await Promise.all([before, after]), [4, 14]);
  assert.ok(nextDone);
  t.close();
});

test("a thread says when it is up (or that it will not be), and flush sends the requests made so far at once", async () => {
  const t = new RequestThread<number, number>(fixture, undefined);
  assert.equal(t.up, false, "not before its module is loaded");
  assert.equal(await t.ready, true);
  assert.equal(t.up, true);
  // Flushed, the first goes in a message of its own; the second, made in the same run of code, in the next.
  const first = t.request(1000);
  t.flush();
  const second = t.request(1000);
  assert.deepEqual(await Promise.all([first, second]), [1, 2]);
  t.close();
  assert.equal(t.up, false);
  const missing = new RequestThread<number, number>(new URL("./no-such-thread", import.meta.url), undefined);
  assert.equal(await missing.ready, false);
  missing.close();
  const closedEarly = new RequestThread<number, number>(fixture, undefined);
  closedEarly.close();
  assert.equal(await closedEarly.ready, false);
});
