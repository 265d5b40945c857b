// The search box: a record stays visible when its own text holds every word typed; a session
// also stays while one of its observations does, and a day while anything in it does.
(() => {
  const q = document.getElementById("q");
  const shown = document.getElementById("shown");
  const recs = [...document.querySelectorAll(".rec")];
  const days = [...document.querySelectorAll(".day")];
  let texts = null;
  const apply = () => {
    const words = q.value.toLowerCase().split(/\s+/).filter(Boolean);
    // Read once, on first use: a large page opens without paying for it.
    texts ??= recs.map((r) => (r.querySelector(":scope > .own") || r).textContent.toLowerCase());
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
