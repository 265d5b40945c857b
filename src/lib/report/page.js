// The search box: a record stays visible when its text holds every word typed; a session also
// stays while one of its observations does, and a day while anything in it does. An
// observation's text is its ref, type and line, and its full record once the records are
// inflated.
//
// The full records are one deflated, base64 text in #records (report/records.rs), inflated on
// the first expand or the first search: the page opens without paying for them. At load this
// script only makes the observation lines focusable: nothing here reads layout.
(() => {
  const FS = "\x1c", GS = "\x1d", RS = "\x1e", US = "\x1f";
  const q = document.getElementById("q");
  const shown = document.getElementById("shown");
  // The lines that open to a full record.
  const LINES = "#timeline li[id], #timeline article > h4";
  for (const l of document.querySelectorAll(LINES)) l.tabIndex = 0;
  let records = null;
  // {labels, full: ref -> the record's fields, texts: ref -> its text lowercased, for the search}.
  const inflate = () => (records ??= (async () => {
    const blob = document.getElementById("records");
    const text64 = blob ? blob.textContent : "";
    let bytes;
    if (Uint8Array.fromBase64) {
      bytes = Uint8Array.fromBase64(text64);
    } else {
      const b64 = atob(text64);
      bytes = new Uint8Array(b64.length);
      for (let i = 0; i < b64.length; i++) bytes[i] = b64.charCodeAt(i);
    }
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
    const [labels, table, ...recs] = (await new Response(stream).text()).split(RS);
    // A part shipped once among the shared ones is FS and its index there.
    const shared = table.split(US);
    const resolve = (r) => (r.includes(FS) ? r.replace(/\x1c(\d+)/g, (_, i) => shared[i]) : r);
    const full = new Map();
    const texts = new Map();
    for (const r of recs) {
      const text = resolve(r);
      const at = text.indexOf(US);
      full.set(text.slice(0, at), text.slice(at + 1));
      texts.set(text.slice(0, at), text.toLowerCase());
    }
    document.documentElement.dataset.records = "inflated";
    return { labels: labels.split(US), full, texts };
  })());
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };
  // A record's full text under its line (an observation's <li>, a session's <h4>); a second
  // click folds it away.
  const expand = async (line) => {
    const rec = line.tagName === "H4" ? line.parentElement : line;
    const open = line.getAttribute("aria-expanded") !== "true";
    line.setAttribute("aria-expanded", open);
    const done = rec.querySelector(":scope > .full");
    if (done) {
      done.hidden = !open;
      return;
    }
    const { labels, full: all } = await inflate();
    const text = all.get(rec.id);
    if (text === undefined || rec.querySelector(":scope > .full")) return;
    const f = text.split(US);
    const full = el("div", "full");
    if (f[0]) full.append(el("p", "summary", f[0]));
    if (f[1]) full.append(el("p", "detail", f[1]));
    labels.forEach((label, i) => {
      if (!f[2 + i]) return;
      const ul = el("ul");
      for (const x of f[2 + i].split(GS)) ul.append(el("li", null, x));
      full.append(el("h5", null, label), ul);
    });
    full.append(el("p", "meta", f[f.length - 1].split(GS).join(" · ")));
    full.hidden = line.getAttribute("aria-expanded") !== "true";
    if (rec === line) rec.append(full);
    else line.nextElementSibling.after(full);
  };
  // The line clicked or keyed, unless on its full record or a link.
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
  // What a record shows of itself, without its full text and (a session) its observations;
  // an observation's ref and type are drawn from its attributes.
  const own = (e) => {
    let t = e.dataset.k ? `${e.id} ${e.dataset.k}\n` : `${e.id}\n`;
    for (const c of e.childNodes) if (c.tagName !== "OL" && !c.classList?.contains("full")) t += c.textContent + "\n";
    return t.toLowerCase();
  };
  // Every record with its own text, session and day; read on the first search.
  let index = null;
  const build = () => {
    const recs = [];
    const sessions = new Map();
    for (const a of document.querySelectorAll("#timeline article")) {
      const s = { e: a, text: own(a), full: true, day: a.parentElement };
      sessions.set(a, s);
      recs.push(s);
    }
    for (const li of document.querySelectorAll("#timeline li[id]")) {
      const session = sessions.get(li.parentElement.parentElement) ?? null;
      recs.push({ e: li, text: own(li), full: true, session, day: li.closest(".day") });
    }
    for (const l of document.querySelectorAll(".learning")) recs.push({ e: l, text: l.textContent.toLowerCase() });
    return { recs, days: document.querySelectorAll(".day") };
  };
  const hide = (e, hidden) => {
    if (e.hidden !== hidden) e.hidden = hidden;
  };
  let full = null;
  const apply = () => {
    const words = q.value.toLowerCase().split(/\s+/).filter(Boolean);
    index ??= build();
    if (words.length && !full) {
      full = inflate().then(({ texts }) => {
        for (const x of index.recs) if (x.full) x.text += "\n" + (texts.get(x.e.id) ?? "");
        apply();
      });
    }
    // A session stays while one of its observations matches; a day while anything in it shows.
    const held = new Set();
    let n = 0;
    for (const x of index.recs) {
      x.match = words.every((w) => x.text.includes(w));
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
