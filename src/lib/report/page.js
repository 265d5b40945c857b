// The search box: a record stays visible when its text holds every word typed; a session also
// stays while one of its observations does, and a day while anything in it does. An
// observation's text is its line, and its full record once the records are inflated.
//
// The full records are one deflated, base64 JSON text in #records (report/records.rs),
// inflated on the first expand or the first search: the page opens without paying for them.
(() => {
  const q = document.getElementById("q");
  const shown = document.getElementById("shown");
  const recs = [...document.querySelectorAll(".rec")];
  const days = [...document.querySelectorAll(".day")];
  const blob = document.getElementById("records");
  let records = null;
  // ref -> [summary lines, detail lines, ...lists in labels' order, meta], each part a string.
  const inflate = () => (records ??= (async () => {
    const text = blob ? blob.textContent : "";
    let bytes;
    if (Uint8Array.fromBase64) {
      bytes = Uint8Array.fromBase64(text);
    } else {
      const b64 = atob(text);
      bytes = new Uint8Array(b64.length);
      for (let i = 0; i < b64.length; i++) bytes[i] = b64.charCodeAt(i);
    }
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
    const { labels, strings, records: raw } = JSON.parse(await new Response(stream).text());
    const out = new Map();
    for (const [ref, fields] of Object.entries(raw)) {
      out.set(ref, fields.map((f) => f.map((p) => (typeof p === "number" ? strings[p] : p))));
    }
    out.labels = labels;
    document.documentElement.dataset.records = "inflated";
    return out;
  })());
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };
  // An observation's full record, under its line; a second click folds it away.
  const expand = async (line) => {
    const li = line.parentElement;
    const open = line.getAttribute("aria-expanded") !== "true";
    line.setAttribute("aria-expanded", open);
    const shown = li.querySelector(".full");
    if (shown) {
      shown.hidden = !open;
      return;
    }
    const all = await inflate();
    const f = all.get(li.dataset.ref);
    if (!f || li.querySelector(".full")) return;
    const full = el("div", "full");
    if (f[0].length) full.append(el("p", "summary", f[0].join("\n")));
    if (f[1].length) full.append(el("p", "detail", f[1].join("\n")));
    all.labels.forEach((label, i) => {
      const list = f[2 + i];
      if (!list.length) return;
      const ul = el("ul");
      for (const x of list) ul.append(el("li", null, x));
      full.append(el("h5", null, label), ul);
    });
    full.append(el("p", "meta", f[f.length - 1].join(" · ")));
    full.hidden = line.getAttribute("aria-expanded") !== "true";
    li.append(full);
  };
  const line = (e) => e.target.closest && e.target.closest(".obs > .line");
  document.addEventListener("click", (e) => {
    if (line(e) && !e.target.closest("a")) expand(line(e));
  });
  document.addEventListener("keydown", (e) => {
    if (line(e) && e.target === line(e) && (e.key === "Enter" || e.key === " ")) {
      e.preventDefault();
      expand(line(e));
    }
  });
  let texts = null;
  let full = false;
  const apply = () => {
    const words = q.value.toLowerCase().split(/\s+/).filter(Boolean);
    // Read once, on first use: a large page opens without paying for it.
    texts ??= recs.map((r) => (r.querySelector(":scope > .own") || r.querySelector(":scope > .line") || r).textContent.toLowerCase());
    if (words.length && !full) {
      full = true;
      inflate().then((all) => {
        recs.forEach((r, i) => {
          const f = all.get(r.dataset.ref);
          if (f && r.classList.contains("obs")) texts[i] += "\n" + f.flat().join("\n").toLowerCase();
        });
        apply();
      });
    }
    let n = 0;
    recs.forEach((r, i) => {
      r.dataset.match = words.every((w) => texts[i].includes(w)) ? "1" : "0";
    });
    for (const r of recs) {
      const own = r.dataset.match === "1";
      const keep = own || (r.classList.contains("session") && r.querySelector('.obs[data-match="1"]') !== null);
      r.hidden = !keep;
      n += own;
    }
    for (const d of days) d.hidden = d.querySelector(".rec:not([hidden])") === null;
    shown.value = words.length ? `${n} of ${recs.length} records` : "";
  };
  q.addEventListener("input", apply);
  if (q.value) apply();
})();
