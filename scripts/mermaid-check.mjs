// Parses each file named on the command line with Mermaid's own parser; prints "ok FILE" or
// "error FILE: message" per file; exit 1 when any failed.
import { JSDOM } from "jsdom";
import fs from "node:fs";
const dom = new JSDOM("<!doctype html><html><body></body></html>");
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await import("mermaid");
mermaid.initialize({ startOnLoad: false });
let bad = 0;
for (const f of process.argv.slice(2)) {
  try {
    await mermaid.parse(fs.readFileSync(f, "utf8"));
    console.log(`ok ${f}`);
  } catch (e) {
    bad++;
    console.log(`error ${f}: ${String(e.message || e).split("\n").slice(0, 3).join(" ")}`);
  }
}
process.exit(bad ? 1 : 0);
