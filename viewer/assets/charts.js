// Cohort charts: a comparison's rows (cohort compare --json) drawn as one
// chart per metric and case, the number of processes (or the rows' own x)
// across, each
// algorithm's measured figure a solid line with dots and the theory's a
// dashed line with hollow squares in the same colour; then maps of a
// run's nodes, their estimated places beside the true ones.
(function () {
  "use strict";
  const DATA = JSON.parse(document.getElementById("cohort-data").textContent);
  const COLORS = ["#2f6aa8", "#1b9e77", "#a6761d", "#d62728", "#7570b3", "#66a61e", "#1f3f8f", "#b8860b", "#6a3d9a", "#2e8b57", "#e7298a", "#5b6770"];
  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
  const rows = DATA.rows || [];
  document.getElementById("title").textContent = DATA.title;
  document.title = DATA.title + " — Cohort charts";

  // Charts by metric and case, in the order the rows name them.
  const charts = new Map();
  const algos = [];
  rows.forEach((r) => {
    const key = r.metric + " · " + (r.case || "");
    if (!charts.has(key)) charts.set(key, { metric: r.metric, case: r.case, rows: [] });
    charts.get(key).rows.push(r);
    if (!algos.includes(r.algo)) algos.push(r.algo);
  });
  const color = (a) => COLORS[algos.indexOf(a) % COLORS.length];
  document.getElementById("info").textContent = ` · ${charts.size} charts · ${algos.length} algorithms · measured (solid) beside theory (dashed)`;

  const stats = { charts: 0, series: 0, measured: 0, theory: 0 };
  const W = 460, H = 260, L = 56, R = 12, T = 12, B = 40;
  const box = document.getElementById("charts");
  // Across: the number of processes, or the row's own x (a round, a
  // noise level) where it gives one.
  const xOf = (r) => (typeof r.x === "number" ? r.x : r.nodes);
  charts.forEach((c) => {
    const xs = [...new Set(c.rows.map(xOf))].sort((a, b) => a - b);
    const xLabel = c.rows[0].x_label || "processes";
    const logY = c.rows.every((r) => r.log_y);
    const vals = [];
    c.rows.forEach((r) => { if (r.measured !== null) vals.push(r.measured); if (r.theory !== null) vals.push(r.theory); });
    if (!vals.length || logY && vals.some((v) => !(v > 0))) return;
    let lo = Math.min(0, ...vals), hi = Math.max(...vals);
    if (logY) { lo = Math.floor(Math.log10(Math.min(...vals))); hi = Math.ceil(Math.log10(hi)); }
    if (hi <= lo) hi = lo + 1;
    if (!logY) hi += (hi - lo) * 0.08;
    const X = (n) => xs.length === 1 ? L + (W - L - R) / 2 : L + xs.indexOf(n) * (W - L - R) / (xs.length - 1);
    const Y = (v) => T + (H - T - B) * (1 - ((logY ? Math.log10(v) : v) - lo) / (hi - lo));
    const parts = [];
    // Axes and ticks: every power of ten on a logarithmic scale.
    const ticks = [];
    if (logY) for (let k = lo; k <= hi; k++) ticks.push(Math.pow(10, k));
    else { const step = niceStep((hi - lo) / 5); for (let v = Math.ceil(lo / step) * step; v <= hi; v += step) ticks.push(v); }
    ticks.forEach((v) => {
      parts.push(`<line x1="${L}" x2="${W - R}" y1="${Y(v)}" y2="${Y(v)}" stroke="#eceef1"/>`,
        `<text x="${L - 5}" y="${Y(v) + 4}" text-anchor="end" font-size="10" fill="#666">${fmt(v)}</text>`);
    });
    xs.forEach((n) => parts.push(`<text x="${X(n)}" y="${H - B + 15}" text-anchor="middle" font-size="10" fill="#666">${fmt(n)}</text>`));
    parts.push(`<line x1="${L}" x2="${W - R}" y1="${H - B}" y2="${H - B}" stroke="#999"/>`, `<line x1="${L}" x2="${L}" y1="${T}" y2="${H - B}" stroke="#999"/>`,
      `<text class="x-label" x="${(L + W - R) / 2}" y="${H - 6}" text-anchor="middle" font-size="11" fill="#444">${esc(xLabel)}${logY ? " · log scale" : ""}</text>`);
    const notes = new Set();
    algos.forEach((a) => {
      const mine = c.rows.filter((r) => r.algo === a).sort((p, q) => xOf(p) - xOf(q));
      if (!mine.length) return;
      mine.forEach((r) => { if (r.note) notes.add(`${a}: ${r.note}`); });
      const line = (key, dash, cls) => {
        const pts = mine.filter((r) => r[key] !== null).map((r) => [X(xOf(r)), Y(r[key]), r]);
        if (!pts.length) return 0;
        if (pts.length > 1) parts.push(`<polyline class="${cls}" fill="none" stroke="${color(a)}" stroke-width="2" ${dash ? 'stroke-dasharray="6 4"' : ""} points="${pts.map((p) => p[0] + "," + p[1]).join(" ")}"/>`);
        pts.forEach(([x, y, r]) => {
          const tip = `<title>${esc(a)}, ${esc(xLabel)} ${fmt(xOf(r))}: ${key} ${fmt(r[key])}</title>`;
          parts.push(dash ? `<rect class="${cls}-pt" x="${x - 3.5}" y="${y - 3.5}" width="7" height="7" fill="#fff" stroke="${color(a)}" stroke-width="1.6">${tip}</rect>`
            : `<circle class="${cls}-pt" cx="${x}" cy="${y}" r="3.5" fill="${color(a)}">${tip}</circle>`);
        });
        return pts.length;
      };
      stats.measured += line("measured", false, "measured");
      stats.theory += line("theory", true, "theory");
      stats.series++;
    });
    const legend = algos.filter((a) => c.rows.some((r) => r.algo === a))
      .map((a) => `<span style="color:${color(a)}">■</span> ${esc(a)}`).join(" &nbsp; ");
    const div = document.createElement("div");
    div.className = "chart";
    div.dataset.metric = c.metric; div.dataset.case = c.case || "";
    div.innerHTML = `<h3>${esc(c.metric)}${c.case ? ` <span style="color:#777;font-weight:normal">(${esc(c.case)})</span>` : ""}</h3>` +
      `<svg width="${W}" height="${H}" viewBox="0 0 ${W} ${H}">${parts.join("")}</svg>` +
      `<div class="legend">${legend} &nbsp; <span style="color:#555">— measured · - - □ theory</span></div>` +
      [...notes].map((n) => `<div class="note">${esc(n)}</div>`).join("");
    box.appendChild(div);
    stats.charts++;
  });
  if (!stats.charts && !(DATA.maps || []).length) box.textContent = "No figures to chart.";

  // Maps: each node at its true place (a hollow ring) and where the run
  // put it (a dot coloured by the node's error, green to red), a line
  // between the two; equal scales across and up, so that an offset is
  // drawn at its length. The worst nodes are named.
  stats.maps = 0; stats.mapNodes = 0; stats.estimates = 0;
  (DATA.maps || []).forEach((m) => {
    const nodes = m.nodes || [];
    if (!nodes.length) return;
    const MW = 560, MH = 460, ML = 52, MR = 12, MT = 12, MB = 40;
    const pts = [];
    nodes.forEach((n) => { pts.push(n.truth); if (n.estimate) pts.push(n.estimate); });
    let x0 = Math.min(...pts.map((p) => p[0])), x1 = Math.max(...pts.map((p) => p[0]));
    let y0 = Math.min(...pts.map((p) => p[1])), y1 = Math.max(...pts.map((p) => p[1]));
    const pw = MW - ML - MR, ph = MH - MT - MB;
    const k = Math.min(pw / Math.max(x1 - x0, 1e-9), ph / Math.max(y1 - y0, 1e-9)) * 0.96;
    const cx = (x0 + x1) / 2, cy = (y0 + y1) / 2;
    const X = (v) => ML + pw / 2 + (v - cx) * k;
    const Y = (v) => MT + ph / 2 - (v - cy) * k;
    const maxErr = m.max_error > 0 ? m.max_error : Math.max(...nodes.map((n) => n.error), 1e-12);
    const errColor = (e) => `hsl(${Math.round(120 * (1 - Math.min(e / maxErr, 1)))}, 75%, 40%)`;
    const parts = [];
    // Ticks in the plane's unit, the same step both ways.
    const step = niceStep(Math.max(x1 - x0, y1 - y0) / 6);
    for (let v = Math.ceil((cx - pw / 2 / k) / step) * step; X(v) <= MW - MR; v += step) {
      parts.push(`<line x1="${X(v)}" x2="${X(v)}" y1="${MT}" y2="${MH - MB}" stroke="#eceef1"/>`,
        `<text x="${X(v)}" y="${MH - MB + 14}" text-anchor="middle" font-size="10" fill="#666">${fmt(v)}</text>`);
    }
    for (let v = Math.ceil((cy - ph / 2 / k) / step) * step; Y(v) >= MT; v += step) {
      parts.push(`<line x1="${ML}" x2="${MW - MR}" y1="${Y(v)}" y2="${Y(v)}" stroke="#eceef1"/>`,
        `<text x="${ML - 5}" y="${Y(v) + 4}" text-anchor="end" font-size="10" fill="#666">${fmt(v)}</text>`);
    }
    parts.push(`<rect x="${ML}" y="${MT}" width="${pw}" height="${ph}" fill="none" stroke="#999"/>`,
      `<text class="map-label" x="${ML + pw / 2}" y="${MH - 8}" text-anchor="middle" font-size="11" fill="#444">${esc(m.unit)} · true place ○, estimate ● coloured by error</text>`);
    const tip = (n) => {
      let t = `node ${n.id}: true place (${fmt(n.truth[0])}, ${fmt(n.truth[1])})`;
      if (n.estimate) {
        const off = Math.hypot(n.estimate[0] - n.truth[0], n.estimate[1] - n.truth[1]);
        t += `, estimate (${fmt(n.estimate[0])}, ${fmt(n.estimate[1])}), ${fmt(off)} ${m.unit} off`;
      }
      t += `; ${m.error_name} ${fmt(n.error)}`;
      return esc(n.detail ? `${t}; ${n.detail}` : t);
    };
    nodes.forEach((n) => {
      if (!n.estimate) return;
      parts.push(`<line class="offset" data-id="${n.id}" x1="${X(n.truth[0])}" y1="${Y(n.truth[1])}" x2="${X(n.estimate[0])}" y2="${Y(n.estimate[1])}" stroke="${errColor(n.error)}" stroke-opacity="0.55" stroke-width="1"/>`);
    });
    nodes.forEach((n) => {
      parts.push(`<circle class="truth-pt" data-id="${n.id}" cx="${X(n.truth[0])}" cy="${Y(n.truth[1])}" r="3" fill="none" stroke="#555" stroke-width="1"><title>${tip(n)}</title></circle>`);
    });
    nodes.forEach((n) => {
      if (!n.estimate) return;
      parts.push(`<circle class="estimate-pt" data-id="${n.id}" data-error="${n.error}" cx="${X(n.estimate[0])}" cy="${Y(n.estimate[1])}" r="3" fill="${errColor(n.error)}"><title>${tip(n)}</title></circle>`);
      stats.estimates++;
    });
    // The worst five, named beside their estimates.
    const worst = nodes.filter((n) => n.estimate).sort((a, b) => b.error - a.error || a.id - b.id).slice(0, 5);
    worst.forEach((n) => parts.push(`<text class="worst" x="${X(n.estimate[0]) + 5}" y="${Y(n.estimate[1]) - 4}" font-size="10" font-weight="bold" fill="${errColor(n.error)}" stroke="#fff" stroke-width="3" paint-order="stroke">${n.id}</text>`));
    const errs = nodes.map((n) => n.error).sort((a, b) => a - b);
    const median = errs[Math.ceil(errs.length / 2) - 1];
    const div = document.createElement("div");
    div.className = "chart map";
    div.dataset.title = m.title;
    div.innerHTML = `<h3>${esc(m.title)}</h3>` +
      `<svg width="${MW}" height="${MH}" viewBox="0 0 ${MW} ${MH}">${parts.join("")}</svg>` +
      `<div class="legend">${esc(m.error_name)}: <span style="color:${errColor(0)}">● 0</span> … <span style="color:${errColor(maxErr)}">● ${fmt(maxErr)}${m.max_error > 0 ? " or more" : ""}</span>` +
      ` · median ${fmt(median)} over ${nodes.length} nodes</div>` +
      (worst.length ? `<div class="note worst-list">largest: ${worst.map((n) => `node ${n.id} (${fmt(n.error)})`).join(", ")}</div>` : "") +
      (m.note ? `<div class="note">${esc(m.note)}</div>` : "");
    box.appendChild(div);
    stats.maps++;
    stats.mapNodes += nodes.length;
  });

  function niceStep(raw) {
    const base = Math.pow(10, Math.floor(Math.log10(raw || 1)));
    for (const m of [1, 2, 5, 10]) if (m * base >= raw) return m * base;
    return 10 * base;
  }
  function fmt(v) {
    const a = Math.abs(v);
    if (a >= 1e6) return (v / 1e6).toPrecision(3) + "M";
    if (a >= 1e4) return (v / 1e3).toPrecision(3) + "k";
    return +v.toPrecision(4) + "";
  }

  // The test hook: what is drawn.
  window.cohortCharts = { stats: () => Object.assign({}, stats) };
})();
