// Child process of the buffer benchmark: resident memory of opening a buffer file and searching it once.
import { ReplayBuffer } from "../src/buffer/index.ts";

const [file, threshold] = [process.argv[2], Number(process.argv[3] ?? 250_000)];
const gc = (globalThis as { gc?: () => void }).gc;
gc?.();
const base = process.memoryUsage();
const b = ReplayBuffer.open(file, { annThreshold: threshold });
gc?.();
const opened = process.memoryUsage();
await b.search("click[buy now]", { k: 5 });
gc?.();
const searched = process.memoryUsage();
b.close();
const mb = (x: number) => Math.round(x / 2 ** 20);
console.log(
  JSON.stringify({
    baseRss: mb(base.rss),
    openRss: mb(opened.rss),
    openHeap: mb(opened.heapUsed),
    searchRss: mb(searched.rss),
    searchHeap: mb(searched.heapUsed),
    external: mb(searched.external + searched.arrayBuffers),
  }),
);
