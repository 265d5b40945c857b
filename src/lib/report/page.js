// The search box: a record stays visible when its text holds every word typed; a session also
// stays while one of its observations does, and a day while anything in it does. A record's
// text is what its line or card shows and its full record.
//
// The full records are one deflated text in #records (report/records.rs), inflated on
// the first expand or the first search: the page opens without paying for them. Nothing here
// reads layout.
(() => {
  const FS = "\x1c", GS = "\x1d", RS = "\x1e", US = "\x1f";
  const q = document.getElementById("q");
  const shown = document.getElementById("shown");
  // The lines that open to a full record: an observation's <li>, a session's title.
  const LINES = "#timeline li[id], #timeline article > h4";
  // Focusable once the page is up: ten thousand attributes set are 30 ms not spent before the
  // first paint.
  const focusable = () => {
    for (const l of document.querySelectorAll(LINES)) l.tabIndex = 0;
  };
  if (window.requestIdleCallback) requestIdleCallback(focusable, { timeout: 500 });
  else setTimeout(focusable, 0);

  // A record's parts shipped once among the shared ones are FS and an index there. The search
  // reads each record as its text with those parts cut out (FS left in their place: no word
  // typed spans one) and the list of them, so a part shared by a thousand records is searched
  // once, not a thousand times.
  let records = null;
  // The compressed records' bytes, written 7 bits to a character (records.rs, `seven`).
  const UNSAFE = [0, 13, 60];
  const unseven = (s) => {
    const out = new Uint8Array(Math.ceil((s.length * 14) / 8));
    let acc = 0;
    let bits = 0;
    let o = 0;
    const put = (v) => {
      acc = ((acc << 7) | v) & 0x7fff;
      bits += 7;
      if (bits >= 8) {
        bits -= 8;
        out[o++] = acc >> bits;
      }
    };
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c < 0x80) put(c);
      else if (c < 0x200) {
        put(UNSAFE[(c - 0x80) >> 7]);
        put((c - 0x80) & 0x7f);
      } else put(UNSAFE[c - 0x200]);
    }
    return out.subarray(0, o);
  };
  const inflate = () => (records ??= (async () => {
    const blob = document.getElementById("records");
    const bytes = unseven(blob ? blob.textContent : "");
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
    const [labels, table, ...raw] = (await new Response(stream).text()).split(RS);
    const shared = table.split(US);
    const sharedLower = shared.map((s) => s.toLowerCase());
    const at = new Map();
    const lower = [];
    const refs = [];
    raw.forEach((r, i) => {
      at.set(r.slice(0, r.indexOf(US)), i);
      const chunks = r.toLowerCase().split(FS);
      const ids = [];
      for (let k = 1; k < chunks.length; k++) {
        const c = chunks[k];
        let j = 0;
        let n = 0;
        for (let d; j < c.length && (d = c.charCodeAt(j) - 48) >= 0 && d <= 9; j++) n = n * 10 + d;
        ids.push(n);
        chunks[k] = c.slice(j);
      }
      lower.push(chunks.join(FS));
      refs.push(ids);
    });
    // A record whole, its fields split: [line, summary, detail, ...lists, meta].
    const fields = (ref) => {
      const i = at.get(ref);
      if (i === undefined) return null;
      const chunks = raw[i].split(FS);
      for (let k = 1; k < chunks.length; k++) {
        const n = parseInt(chunks[k], 10);
        chunks[k] = shared[n] + chunks[k].slice(String(n).length);
      }
      return chunks.join("").split(US).slice(1);
    };
    document.documentElement.dataset.records = "inflated";
    return { labels: labels.split(US), sharedLower, at, lower, refs, fields };
  })());

  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };
  // A record's full text under its line; a second click folds it away.
  const expand = async (line) => {
    const rec = line.tagName === "H4" ? line.parentElement : line;
    const open = line.getAttribute("aria-expanded") !== "true";
    line.setAttribute("aria-expanded", open);
    const done = rec.querySelector(":scope > .full");
    if (done) {
      done.hidden = !open;
      return;
    }
    const { labels, fields } = await inflate();
    const f = fields(rec.id);
    if (!f || rec.querySelector(":scope > .full")) return;
    const full = el("div", "full");
    if (f[1]) full.append(el("p", "summary", f[1]));
    if (f[2]) full.append(el("p", "detail", f[2]));
    labels.forEach((label, i) => {
      if (!f[3 + i]) return;
      const ul = el("ul");
      for (const x of f[3 + i].split(GS)) ul.append(el("li", null, x));
      full.append(el("h5", null, label), ul);
    });
    full.append(el("p", "meta", f[f.length - 1].split(GS).join(" · ")));
    full.hidden = line.getAttribute("aria-expanded") !== "true";
    if (rec === line) rec.append(full);
    else line.nextElementSibling.after(full);
  };
  const line = (e) => {
    const l = e.target.closest?.(LINES);
    return l && !e.target.closest(".full, a") ? l : null;
  };
  document.addEventListener("click", (e) => {
    const l = line(e);
    if (l) expand(l);
  });
  document.addEventListener("keydown", (e) => {
    if (line(e) === e.target && (e.key === "Enter" || e.key === " ")) {
      e.preventDefault();
      expand(e.target);
    }
  });

  // Every record: its element, day and session, and where its text is. An observation's text
  // is all in the records; a session's card (title, meta, functions) is read from the page,
  // its summary and files from the records; a learning is read from the page.
  let index = null;
  const own = (e) => {
    let t = `${e.id}\n`;
    for (const c of e.children) if (c.tagName !== "OL" && !c.classList.contains("full")) t += c.textContent + "\n";
    return t.toLowerCase();
  };
  const build = ({ at }) => {
    const recs = [];
    const sessions = new Map();
    for (const a of document.querySelectorAll("#timeline article")) {
      const s = { e: a, text: own(a), i: at.get(a.id) ?? -1, day: a.parentElement };
      sessions.set(a, s);
      recs.push(s);
    }
    for (const li of document.querySelectorAll("#timeline li[id]")) {
      const session = sessions.get(li.parentElement.parentElement) ?? null;
      recs.push({ e: li, text: "", i: at.get(li.id) ?? -1, session, day: session ? session.day : li.closest(".day") });
    }
    for (const l of document.querySelectorAll(".learning")) recs.push({ e: l, text: l.textContent.toLowerCase(), i: -1 });
    return { recs, days: document.querySelectorAll(".day") };
  };
  const hide = (e, hidden) => {
    if (e.hidden !== hidden) e.hidden = hidden;
  };
  let typed = 0;
  const apply = async () => {
    const words = q.value.toLowerCase().split(/\s+/).filter(Boolean);
    const now = ++typed;
    if (!words.length && !index) return;
    const r = await inflate();
    if (now !== typed) return;
    index ??= build(r);
    // Per word, the shared parts holding it.
    const hits = words.map((w) => r.sharedLower.map((s) => s.includes(w)));
    const has = (x, w, k) =>
      x.text.includes(w) || (x.i >= 0 && (r.lower[x.i].includes(w) || r.refs[x.i].some((n) => hits[k][n])));
    // A session stays while one of its observations matches; a day while anything in it shows.
    const held = new Set();
    let n = 0;
    for (const x of index.recs) {
      x.match = words.every((w, k) => has(x, w, k));
      n += x.match;
      if (x.match && x.session) held.add(x.session);
    }
    const days = new Set();
    for (const x of index.recs) {
      const show = x.match || held.has(x);
      hide(x.e, !show);
      if (show && x.day) days.add(x.day);
    }
    for (const d of index.days) hide(d, !days.has(d));
    shown.value = words.length ? `${n} of ${index.recs.length} records` : "";
  };
  q.addEventListener("input", apply);
  if (q.value) apply();
})();
