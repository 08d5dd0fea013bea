// Cohort viewer: a trace's space-time diagram on a <canvas>.
//
// One lane per process, time from left to right (true time, or Lamport
// time: one column per Lamport timestamp, as ShiViz and Maelstrom lay
// runs out), an arrow from each send to each receipt coloured by the
// message's type. Zoom with the wheel, pan by dragging; click an event to
// highlight its causal past and future; step through events with ← and →.
// The checkers' results are listed on the left; clicking a violation
// highlights every event of its counterexample.
//
// One lane per process of the trace (DATA.procs, trace.Lanes), in order
// of ID, named by its ID: a live trace whose founders 0..2 took in a member
// 60000 has four lanes, not 60001. Inside, a process is its index in
// procs (evNode, laneOf, groups...); its ID is procs[p].
//
// The whole run is embedded in the page as JSON (#cohort-data), so the
// page needs no server and no network. Nothing here depends on anything
// but the browser: plain JavaScript and the canvas 2D API.
//
// Scale: the model is kept in typed arrays, and each frame scans them
// once. When a frame would draw more than ARROW_BUDGET arrows or
// EVENT_BUDGET events, the lanes are drawn as event density instead (a
// level of detail), and the page says so; violations, the highlighted
// events and the current event are always drawn.
(function () {
  "use strict";
  const started = performance.now();
  const DATA = JSON.parse(document.getElementById("cohort-data").textContent);
  const phases = { parse: performance.now() - started }; // how long opening took, by phase (ms)
  const E = DATA.events;
  const N = E.length;

  // ---------------------------------------------------------------- model

  const ARROW_BUDGET = 4000;
  const EVENT_BUDGET = 20000;
  const LABEL_BUDGET = 1500;

  // Colours: the same as the static SVG (trace/svg.go), so a run looks the
  // same in both.
  const TYPE_COLORS = ["#2f6aa8", "#1b9e77", "#a6761d", "#17becf", "#7570b3", "#66a61e", "#1f3f8f", "#b8860b", "#6a3d9a", "#2e8b57"];
  const C = {
    ink: "#333", other: "#5b6770", drop: "#d97a0b", dropPart: "#8c564b", dropGone: "#7f7f7f",
    pending: "#9aa3ad", output: "#1e9e5a", input: "#8546b8", mark: "#d62728", soft: "#e58fb8",
    crashed: "#dcdcdc", cycle: "#c2185b", pause: "#f3d36b", partition: "#b39ddb", past: "#2563eb", future: "#f59e0b",
  };
  const KINDS = ["", "send", "recv", "drop", "dup", "timer", "input", "output", "crash", "recover", "start", "join", "leave"];
  const K = {};
  KINDS.forEach((k, i) => { K[k] = i; });
  const isProcessKind = (k) => k !== K.drop && k !== K.dup && k !== 0;

  // The processes, by ID: those the page names (trace.Lanes), and any
  // other an event names (a page made without them).
  const procs = [], procIdx = new Map(); // index -> ID, ID -> index
  {
    const ids = new Set((DATA.procs || []).filter((p) => Number.isInteger(p) && p >= 0));
    for (const e of E) { ids.add(e.node); if (e.peer >= 0) ids.add(e.peer); }
    if (!ids.size) ids.add(0);
    procs.push(...[...ids].sort((a, b) => a - b));
    procs.forEach((id, p) => procIdx.set(id, p));
  }
  const nProc = procs.length;
  // The index of process ID id, or -1 if the trace has no such process.
  const pidx = (id) => { const p = procIdx.get(id); return p === undefined ? -1 : p; };

  // Per event: kind, process, its peer (-1: none), true time (relative
  // to origin), Lamport x.
  const evKind = new Uint8Array(N);
  const evNode = new Int32Array(N);
  const evPeer = new Int32Array(N);
  const evT = new Float64Array(N);
  const evLam = new Float64Array(N);
  const evType = new Int32Array(N).fill(-1); // message type index (send/recv/drop/dup)

  let tmin = Infinity, tmax = -Infinity;
  for (let i = 0; i < N; i++) {
    const e = E[i];
    evKind[i] = K[e.kind] || 0;
    evNode[i] = procIdx.get(e.node);
    evPeer[i] = e.peer >= 0 ? procIdx.get(e.peer) : -1;
    tmin = Math.min(tmin, e.t);
    tmax = Math.max(tmax, e.t);
  }
  if (N === 0) { tmin = 0; tmax = 1; }
  // Several runs one above the other (viewer.Pair): each process belongs
  // to one, and is named after it: "A:p0", "B:p0".
  const runs = (DATA.runs || []).map((r, k) => Object.assign({ letter: String.fromCharCode(65 + k) }, r));
  const runOf = (id) => { for (let k = runs.length - 1; k >= 0; k--) if (id >= runs[k].first) return runs[k]; return null; };
  // A process's name (p its index): its ID, within its run if several.
  const laneName = (p) => { const id = procs[p], r = runOf(id); return r ? `${r.letter}:p${id - r.first}` : "p" + id; };
  // A live trace is stamped with wall-clock times: its axis counts from its
  // first event. A simulated one counts from 0, when the run began.
  const origin = (tmin >= 1e15 || tmin > (tmax - tmin) / 4) ? tmin : 0;
  for (let i = 0; i < N; i++) evT[i] = E[i].t - origin;

  // Message types, in order of first appearance, and their colours.
  const types = [], typeIdx = new Map();
  // Messages: id -> {send, recvs, drops}. Arrows: send -> receipt or loss.
  const msgs = new Map();
  const msgOf = (id) => {
    let m = msgs.get(id);
    if (!m) { m = { send: -1, recvs: [], drops: [] }; msgs.set(id, m); }
    return m;
  };
  for (let i = 0; i < N; i++) {
    const k = evKind[i], e = E[i];
    if (k === K.send || k === K.recv || k === K.drop || k === K.dup) {
      const ty = e.type || "";
      if (!typeIdx.has(ty)) { typeIdx.set(ty, types.length); types.push(ty); }
      evType[i] = typeIdx.get(ty);
    }
    if (k === K.send) { const m = msgOf(e.msg); if (m.send < 0) m.send = i; }
    else if (k === K.recv) msgOf(e.msg).recvs.push(i);
    else if (k === K.drop) msgOf(e.msg).drops.push(i);
  }
  const typeColor = (t) => (t >= 0 && t < TYPE_COLORS.length) ? TYPE_COLORS[t] : C.other;
  const sendOf = new Int32Array(N).fill(-1); // a receipt's or loss's send
  const arS = [], arR = [], arKind = []; // arKind: 0 receipt, 1 loss, 2 in flight
  msgs.forEach((m) => {
    if (m.send < 0) return;
    m.recvs.forEach((r) => { sendOf[r] = m.send; arS.push(m.send); arR.push(r); arKind.push(0); });
    m.drops.forEach((r) => { sendOf[r] = m.send; arS.push(m.send); arR.push(r); arKind.push(1); });
    if (m.recvs.length + m.drops.length === 0) { arS.push(m.send); arR.push(-1); arKind.push(2); }
  });
  const nArrows = arS.length;
  // Losses by cause, as the SVG names them: the network's, a partition's,
  // or the receiver's being down (crashed, left, not joined).
  const dropCause = (reason) => reason === "partition" ? "partition" : /^receiver /.test(reason || "") ? "receiver down" : "loss";
  const dropCauses = {};
  for (let a = 0; a < nArrows; a++) if (arKind[a] === 1) { const c = dropCause(E[arR[a]].reason); dropCauses[c] = (dropCauses[c] || 0) + 1; }
  phases.messages = performance.now() - started;

  // Lamport positions: a process event at its timestamp; a loss or a
  // duplication just after its send.
  for (let i = 0; i < N; i++) {
    if (isProcessKind(evKind[i])) evLam[i] = E[i].lamport;
  }
  for (let i = 0; i < N; i++) {
    if (!isProcessKind(evKind[i])) {
      const s = evKind[i] === K.dup ? (msgs.get(E[i].msg) || { send: -1 }).send : sendOf[i];
      evLam[i] = s >= 0 ? evLam[s] + 0.5 : 0;
    }
  }
  // Lamport x of a true time: the largest timestamp reached by then (for
  // shading fault periods in the Lamport layout).
  const byTime = Int32Array.from({ length: N }, (_, i) => i).sort((a, b) => evT[a] - evT[b] || a - b);
  const lamPrefix = new Float64Array(N);
  for (let j = 0, m = 0; j < N; j++) { m = Math.max(m, evLam[byTime[j]]); lamPrefix[j] = m; }
  function lamportAt(t) {
    let lo = 0, hi = N;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (evT[byTime[mid]] <= t) lo = mid + 1; else hi = mid; }
    return lo === 0 ? 0 : lamPrefix[lo - 1] + 0.5;
  }
  const byLam = Int32Array.from({ length: N }, (_, i) => i).sort((a, b) => evLam[a] - evLam[b] || a - b);
  phases.sorted = performance.now() - started;

  // Program order: each process event's neighbours on its own lane.
  const prevOn = new Int32Array(N).fill(-1), nextOn = new Int32Array(N).fill(-1);
  {
    const last = new Int32Array(nProc).fill(-1);
    for (let i = 0; i < N; i++) {
      if (!isProcessKind(evKind[i])) continue;
      const p = evNode[i];
      if (last[p] >= 0) { prevOn[i] = last[p]; nextOn[last[p]] = i; }
      last[p] = i;
    }
  }
  // Receipts and losses of each send.
  const fates = new Map();
  for (let a = 0; a < nArrows; a++) {
    if (arR[a] < 0) continue;
    if (!fates.has(arS[a])) fates.set(arS[a], []);
    fates.get(arS[a]).push(arR[a]);
  }

  // Down periods: from a crash or leave to the next start, recovery or join.
  const downs = []; // {p, from, to, fromL, toL}
  {
    const since = new Map();
    for (let i = 0; i < N; i++) {
      const k = evKind[i], p = evNode[i];
      if (k === K.crash || k === K.leave) { if (!since.has(p)) since.set(p, i); }
      else if ((k === K.start || k === K.recover || k === K.join) && since.has(p)) {
        const s = since.get(p);
        downs.push({ p, from: evT[s], to: evT[i], fromL: evLam[s], toL: evLam[i] });
        since.delete(p);
      }
    }
    since.forEach((s, p) => downs.push({ p, from: evT[s], to: Infinity, fromL: evLam[s], toL: Infinity }));
  }

  // Violations: every failed check's events, marked. Promised properties
  // in red, the others softer.
  const checks = DATA.checks || [];
  // Charts of the run (a clock synchronization run's clock offsets), shown
  // over the diagram when picked.
  const figures = DATA.figures || [];
  const markHard = new Uint8Array(N), markSoft = new Uint8Array(N);
  const violOf = new Map(); // event -> names of the violations it is in
  checks.forEach((c) => {
    if (c.ok || !c.events) return;
    c.events.forEach((i) => {
      if (i < 0 || i >= N) return;
      (c.promised ? markHard : markSoft)[i] = 1;
      if (!violOf.has(i)) violOf.set(i, []);
      violOf.get(i).push(c.name);
    });
  });
  // Wait-for cycles: each deadlock a process declared (an output
  // "deadlock" whose data names its cycle, as CMH's), and each one a
  // checker found: its verdict's edges ({from, to, at}: the latest at is
  // where it is drawn) or, from a report without them, the edges its text
  // names ("p0 waits for p1", "p1→p3") drawn at the last event of the
  // counterexample; as arrows between the lanes.
  const cycles = []; // {at, nodes: [p, ...] in cycle order | null, edges: [[a, b], ...], by, src}
  for (let i = 0; i < N; i++) {
    const e = E[i];
    if (evKind[i] !== K.output || e.type !== "deadlock" || !e.data || !Array.isArray(e.data.cycle) || e.data.cycle.length < 2) continue;
    const c = e.data.cycle.map(pidx).filter((p) => p >= 0);
    cycles.push({ at: i, nodes: c, edges: c.map((p, k) => [p, c[(k + 1) % c.length]]), by: `declared by ${laneName(evNode[i])}`, src: "output" });
  }
  // The OR model's wait-for graphs (DATA.graphs): a declaration there
  // names no cycle; the graph is what its declarer reached.
  // An edge of a graph or a verdict ({from, to, at}, process IDs) that
  // names processes of the trace and one of its events.
  const edgeOK = (e) => pidx(e.from) >= 0 && pidx(e.to) >= 0 && Number.isInteger(e.at) && e.at >= 0 && e.at < N;
  (DATA.graphs || []).forEach((g) => {
    const ok = (g.edges || []).filter(edgeOK);
    if (ok.length) cycles.push({ at: Math.max(...ok.map((e) => e.at)), nodes: null, edges: ok.map((e) => [pidx(e.from), pidx(e.to)]), by: g.by, src: "graph" });
  });
  checks.forEach((c) => {
    if (c.ok || !Array.isArray(c.edges) || !c.edges.length) return;
    const ok = c.edges.filter(edgeOK);
    if (!ok.length) return;
    const edges = ok.map((e) => [pidx(e.from), pidx(e.to)]);
    // In cycle order (each edge starting where the last ended, the last
    // ending at the first's start), it reads as one path.
    const ring = edges.every(([, b], k) => b === edges[(k + 1) % edges.length][0]);
    cycles.push({ at: Math.max(...ok.map((e) => e.at)), nodes: ring ? edges.map(([a]) => a) : null, edges, by: c.name, src: "edges" });
  });
  checks.forEach((c) => {
    if (c.ok || !c.detail || !c.events || !c.events.length || Array.isArray(c.edges) && c.edges.length) return;
    const edges = [];
    // A run's verdict names its own processes.
    const run = runs.find((r) => c.name.startsWith(r.letter + ": ")), off = run ? run.first : 0;
    for (const m of c.detail.matchAll(/p(\d+)(?: waits for |→)p(\d+)/g)) {
      const a = pidx(+m[1] + off), b = pidx(+m[2] + off);
      if (a >= 0 && b >= 0 && !edges.some(([x, y]) => x === a && y === b)) edges.push([a, b]);
    }
    const at = Math.max(...c.events.filter((i) => i >= 0 && i < N));
    if (edges.length && at >= 0) cycles.push({ at, nodes: null, edges, by: c.name, src: "detail" });
  });
  const cycleText = (c) => c.nodes ? c.nodes.concat(c.nodes[0]).map(laneName).join(" → ") : c.edges.map(([a, b]) => `${laneName(a)} → ${laneName(b)}`).join(", ");
  const cyclesAt = new Map();
  cycles.forEach((c) => { if (!cyclesAt.has(c.at)) cyclesAt.set(c.at, []); cyclesAt.get(c.at).push(c); });

  let nStates = 0;
  for (let i = 0; i < N; i++) if (E[i].state !== undefined) nStates++;
  let nMarked = 0, nMarkedSoft = 0;
  for (let i = 0; i < N; i++) {
    if (markHard[i] || markSoft[i]) nMarked++;
    if (markSoft[i] && !markHard[i]) nMarkedSoft++;
  }

  // ----------------------------------------------------------------- state

  const S = {
    layout: "time",
    x0: 0, k: 1,          // world coordinate at the plot's left edge; pixels per unit
    scrollY: 0,           // vertical scroll of the lanes (pixels)
    procOn: new Uint8Array(nProc).fill(1),
    typeOn: new Uint8Array(types.length + 1).fill(1),
    cur: -1,              // the current event (stepping, clicking)
    hl: null,             // Uint8Array: 1 past, 2 future, 3 the event, 4 a counterexample's
    hlCount: 0,
    viol: -1,             // the violation selected in the list
    picked: new Set(),    // lanes picked (by their names) to be collapsed
    figure: -1,           // the figure shown over the diagram
  };
  // Collapsed groups: each one's processes share one lane; the messages
  // within a group are hidden, those to or from it end on its lane.
  const groupOf = new Int32Array(nProc).fill(-1);
  let groups = [];
  // The lanes drawn, top to bottom ({name, procs, group}), and each
  // process's row (-1: hidden).
  let lanes = [], laneOf = new Int32Array(nProc);
  function layoutLanes() {
    lanes = [];
    const rowOf = new Map();
    for (let p = 0; p < nProc; p++) {
      laneOf[p] = -1;
      if (!S.procOn[p]) continue;
      const g = groupOf[p];
      if (g < 0) { laneOf[p] = lanes.length; lanes.push({ name: laneName(p), procs: [p], group: false }); continue; }
      if (!rowOf.has(g)) { rowOf.set(g, lanes.length); lanes.push({ name: groupName(groups[g]), procs: [], group: true }); }
      laneOf[p] = rowOf.get(g);
      lanes[laneOf[p]].procs.push(p);
    }
  }
  // "p0–p3" for a run of processes (consecutive IDs), else "{p0,p2,p5}".
  function groupName(ps) {
    const run = ps.every((p, k) => k === 0 || procs[p] === procs[ps[k - 1]] + 1);
    return run ? laneName(ps[0]) + "–" + laneName(ps[ps.length - 1]) : "{" + ps.map(laneName).join(",") + "}";
  }
  // Collapse processes ps (two or more) into one lane; processes already
  // in a group bring their whole group.
  function collapse(ps) {
    const set = new Set();
    ps.forEach((p) => { if (p >= 0 && p < nProc) { if (groupOf[p] >= 0) groups[groupOf[p]].forEach((q) => set.add(q)); else set.add(p); } });
    if (set.size < 2) return;
    const members = [...set].sort((a, b) => a - b);
    groups = groups.filter((g) => !g.some((q) => set.has(q)));
    groups.push(members);
    groupOf.fill(-1);
    groups.forEach((g, k) => g.forEach((q) => { groupOf[q] = k; }));
    S.picked.clear();
    layoutLanes(); draw();
  }
  function expand() {
    groups = []; groupOf.fill(-1); S.picked.clear(); layoutLanes(); draw();
  }
  const inGroup = (a, b) => groupOf[a] >= 0 && groupOf[a] === groupOf[b];
  layoutLanes();

  const cv = document.getElementById("canvas"), ctx = cv.getContext("2d");
  const stage = document.getElementById("stage");
  let W = 800, H = 400;
  const LEFT = 56, TOP = 30, RIGHT = 16;
  const laneH = () => Math.max(14, Math.min(120, (H - TOP - 24) / Math.max(lanes.length, 1)));
  const laneY = (p) => TOP + (laneOf[p] + 0.5) * laneH() - S.scrollY;
  const wx = (i) => S.layout === "time" ? evT[i] : evLam[i];
  const X = (w) => LEFT + (w - S.x0) * S.k;
  const order = () => S.layout === "time" ? byTime : byLam;
  function worldRange() {
    if (N === 0) return [0, 1];
    const o = order();
    let a = wx(o[0]), b = wx(o[N - 1]);
    if (S.layout === "time") a = Math.min(a, 0);
    if (b <= a) b = a + 1;
    return [a, b];
  }
  function fit() {
    const [a, b] = worldRange();
    const pad = (b - a) * 0.02;
    S.k = (W - LEFT - RIGHT) / (b - a + 2 * pad);
    S.x0 = a - pad;
    S.scrollY = 0;
  }
  function clampScroll() {
    const max = Math.max(0, lanes.length * laneH() - (H - TOP - 24));
    S.scrollY = Math.max(0, Math.min(max, S.scrollY));
  }
  // First index of the order whose world coordinate is >= w.
  function lower(w) {
    const o = order();
    let lo = 0, hi = N;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (wx(o[mid]) < w) lo = mid + 1; else hi = mid; }
    return lo;
  }
  const eventShown = (i) => laneOf[evNode[i]] >= 0 && (evType[i] < 0 || S.typeOn[Math.min(evType[i], types.length)]);

  // ------------------------------------------------------------- drawing

  let stats = {}, drawnArrows = [];
  let frame = 0;
  function request() { if (!frame) frame = requestAnimationFrame(() => { frame = 0; draw(); }); }

  function resize() {
    const r = stage.getBoundingClientRect(), dpr = window.devicePixelRatio || 1;
    W = Math.max(200, r.width); H = Math.max(120, r.height);
    cv.width = Math.round(W * dpr); cv.height = Math.round(H * dpr);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  }

  function draw() {
    const t0 = performance.now();
    clampScroll();
    ctx.clearRect(0, 0, W, H);
    ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, W, H);
    const lh = laneH();
    const wa = S.x0, wb = S.x0 + (W - LEFT) / S.k;
    const faded = S.hl !== null;

    // Lanes.
    ctx.save();
    ctx.beginPath(); ctx.rect(LEFT, TOP, W - LEFT, H - TOP); ctx.clip();
    lanes.forEach((ln, r) => {
      const y = TOP + (r + 0.5) * lh - S.scrollY;
      if (r % 2 === 0) { ctx.fillStyle = "#fafbfc"; ctx.fillRect(LEFT, y - lh / 2, W - LEFT, lh); }
      if (ln.group) { ctx.fillStyle = "#eef3f9"; ctx.fillRect(LEFT, y - lh / 2 + 1, W - LEFT, lh - 2); }
      ctx.strokeStyle = "#c9ced4"; ctx.lineWidth = 1;
      ctx.beginPath(); ctx.moveTo(LEFT, y); ctx.lineTo(W, y); ctx.stroke();
    });
    // Runs: a rule above each one's first lane, and its title.
    runs.forEach((run) => {
      const r = lanes.findIndex((ln) => ln.procs.some((p) => runOf(procs[p]) === run));
      if (r < 0) return;
      const y = TOP + r * lh - S.scrollY;
      if (r > 0) { ctx.strokeStyle = "#555"; ctx.lineWidth = 2; ctx.beginPath(); ctx.moveTo(LEFT, y); ctx.lineTo(W, y); ctx.stroke(); }
      ctx.fillStyle = "#333"; ctx.font = "bold 11px DejaVu Sans, Helvetica, Arial, sans-serif";
      ctx.fillText(`${run.letter}: ${clip(run.title, 90)}`, LEFT + 6, y + 12);
    });
    const shaded = drawShades(lh);
    const ticks = drawGrid(wa, wb);

    // Which arrows and events are in view.
    const candidates = [];
    let withinGroups = 0;
    for (let a = 0; a < nArrows; a++) {
      const s = arS[a], r = arR[a];
      const ws = wx(s), wr = r >= 0 ? wx(r) : (S.layout === "time" ? tmax - origin : ws + 1);
      if (Math.max(ws, wr) < wa || Math.min(ws, wr) > wb) continue;
      const to = r >= 0 ? evNode[r] : evPeer[s];
      if (laneOf[evNode[s]] < 0 || to < 0 || laneOf[to] < 0) continue;
      if (inGroup(evNode[s], to)) { withinGroups++; continue; }
      if (!S.typeOn[Math.min(evType[s], types.length)]) continue;
      candidates.push(a);
    }
    const lo = lower(wa), hi = lower(wb + 1e-9);
    const o = order();
    let inView = 0;
    for (let j = lo; j < hi; j++) if (eventShown(o[j])) inView++;
    const lodArrows = candidates.length > ARROW_BUDGET;
    const lodEvents = inView > EVENT_BUDGET;
    const important = (i) => markHard[i] || markSoft[i] || (S.hl && S.hl[i]) || i === S.cur;

    // Arrows.
    drawnArrows = [];
    const labels = [];
    for (const a of candidates) {
      const s = arS[a], r = arR[a];
      if (lodArrows && !(important(s) || (r >= 0 && important(r)))) continue;
      drawnArrows.push(a);
    }
    for (const a of drawnArrows) drawArrow(a, faded);
    const arrowsDrawn = drawnArrows.length;

    // Events: each one, or their density per lane.
    let eventsDrawn = 0;
    if (lodEvents || lodArrows) drawDensity(lo, hi, lh);
    for (let j = lo; j < hi; j++) {
      const i = o[j];
      if (!eventShown(i) || !isProcessKind(evKind[i]) && evKind[i] !== K.drop) continue;
      if ((lodEvents || lodArrows) && !important(i)) continue;
      drawEvent(i, faded);
      eventsDrawn++;
      if (!lodArrows && !lodEvents && labels.length < LABEL_BUDGET && (evKind[i] === K.output || evKind[i] === K.input)) labels.push(i);
    }
    // Marks: counterexamples, the highlight, the current event.
    for (let j = lo; j < hi; j++) {
      const i = o[j];
      if (!eventShown(i)) continue;
      if (markHard[i] || markSoft[i]) ring(i, markHard[i] ? C.mark : C.soft, 7, 2.2);
      if (S.hl && S.hl[i] === 4) ring(i, C.mark, 10, 1.5);
    }
    if (S.cur >= 0 && eventShown(S.cur)) { ring(S.cur, "#000", 9, 2); }
    const cycleEdges = drawCycles(wa, wb);
    const labelsDrawn = !lodArrows && !lodEvents ? drawLabels(labels) : 0;
    ctx.restore();

    drawTicks(ticks);
    const laneNames = drawLaneNames(lh);
    const lod = document.getElementById("lod");
    if (lodArrows || lodEvents) {
      lod.textContent = `Zoomed out: ${candidates.length.toLocaleString("en")} messages and ${inView.toLocaleString("en")} events in view, ` +
        `drawn as event density per process; arrows are drawn below ${ARROW_BUDGET.toLocaleString("en")} messages in view and events below ` +
        `${EVENT_BUDGET.toLocaleString("en")}. Violations, the highlight and the current event are always drawn. Zoom in (wheel) to see every message.`;
    } else lod.textContent = "";
    stats = {
      cycles: cycles.length, cycleEdges, runs: runs.length,
      lanes: lanes.length, groups: groups.length, withinGroups, processes: nProc, events: N, eventsInView: inView, eventsDrawn,
      arrows: arrowsDrawn, arrowsInView: candidates.length, arrowsTotal: nArrows,
      lod: lodArrows || lodEvents, shaded, labels: labelsDrawn, laneNames, highlighted: S.hlCount, marked: nMarked, markedSoft: nMarkedSoft, dropCauses, cur: S.cur,
      violations: checks.filter((c) => !c.ok && c.events && c.events.length).length,
      layout: S.layout, types: types.length, states: nStates, drawMs: performance.now() - t0, openMs: stats.openMs, readyMs: stats.readyMs, phases: stats.phases,
    };
  }

  // Shades the periods a process was down (from the trace), and the
  // partitions and pauses of the run (DATA.shades); returns how many bands
  // it drew.
  function drawShades(lh) {
    const xt = (t) => X(S.layout === "time" ? t : lamportAt(t));
    let n = 0;
    const band = (p, x0, x1, color, alpha) => {
      if (laneOf[p] < 0 || x1 < LEFT || x0 > W) return;
      n++;
      ctx.globalAlpha = alpha; ctx.fillStyle = color;
      ctx.fillRect(x0, laneY(p) - lh / 2 + 2, Math.max(x1 - x0, 2), lh - 4);
      ctx.globalAlpha = 1;
    };
    downs.forEach((d) => {
      const x0 = X(S.layout === "time" ? d.from : d.fromL);
      const x1 = d.to === Infinity ? W : X(S.layout === "time" ? d.to : d.toL);
      band(d.p, x0, x1, C.crashed, 0.8);
    });
    (DATA.shades || []).forEach((s) => {
      const x0 = xt(s.from - origin), x1 = s.to > s.from ? xt(s.to - origin) : W;
      const color = s.kind === "partition" ? C.partition : C.pause;
      if (!s.nodes || s.nodes.length === 0) {
        if (x1 >= LEFT && x0 <= W) n++;
        ctx.globalAlpha = 0.22; ctx.fillStyle = color;
        ctx.fillRect(x0, TOP, Math.max(x1 - x0, 2), H - TOP); ctx.globalAlpha = 1;
      } else s.nodes.forEach((id) => { if (pidx(id) >= 0) band(pidx(id), x0, x1, color, 0.4); });
    });
    return n;
  }

  // A grid line at each tick: a round step of time (or of Lamport
  // timestamps). Returns the ticks, labelled above the lanes by drawTicks.
  function drawGrid(wa, wb) {
    const span = wb - wa, target = (W - LEFT) / 110;
    const raw = span / target, base = Math.pow(10, Math.floor(Math.log10(raw)));
    let step = base;
    for (const m of [1, 2, 5, 10]) if (m * base >= raw) { step = m * base; break; }
    if (S.layout === "lamport") step = Math.max(1, Math.round(step));
    const ticks = [];
    ctx.strokeStyle = "#eceef1"; ctx.lineWidth = 1;
    for (let v = Math.ceil(wa / step) * step; v <= wb; v += step) {
      const x = X(v);
      ctx.beginPath(); ctx.moveTo(x, TOP); ctx.lineTo(x, H); ctx.stroke();
      ticks.push(v);
    }
    return ticks;
  }
  function drawTicks(ticks) {
    ctx.fillStyle = "#fff"; ctx.fillRect(LEFT, 0, W - LEFT, TOP);
    ctx.fillStyle = "#666"; ctx.font = "11px DejaVu Sans, Helvetica, Arial, sans-serif";
    ctx.textAlign = "center";
    for (const v of ticks) ctx.fillText(S.layout === "time" ? fmtNS(v) : "L" + Math.round(v), X(v), 18);
    ctx.textAlign = "left";
  }

  function arrowEnds(a) {
    const s = arS[a], r = arR[a];
    const x1 = X(wx(s)), y1 = laneY(evNode[s]);
    if (r >= 0) return [x1, y1, X(wx(r)), laneY(evNode[r])];
    // In flight at the end of the run: towards the receiver, off the last event.
    const to = evPeer[s];
    const xe = S.layout === "time" ? X(tmax - origin) + 24 : X(wx(s) + 1);
    return [x1, y1, xe, laneY(to)];
  }

  function drawArrow(a, faded) {
    const s = arS[a], r = arR[a], kind = arKind[a];
    const [x1, y1, x2, y2] = arrowEnds(a);
    const lit = S.hl && S.hl[s] && (r < 0 || S.hl[r]);
    const marked = markHard[s] && (r < 0 || markHard[r]), soft = !marked && markSoft[s] && (r < 0 || markSoft[r]);
    let color = typeColor(evType[s]);
    if (kind === 1) color = dropColor(E[r].reason);
    if (kind === 2) color = C.pending;
    if (marked) color = C.mark; else if (soft) color = C.soft;
    ctx.globalAlpha = faded && !lit ? fadeAlpha() : 1;
    ctx.strokeStyle = color; ctx.fillStyle = color;
    ctx.lineWidth = marked || soft || lit ? 2 : 1.3;
    ctx.setLineDash(kind === 0 ? [] : kind === 1 ? [5, 3] : [2, 3]);
    ctx.beginPath(); ctx.moveTo(x1, y1);
    // A loss stops three quarters of the way, with a cross.
    const ex = kind === 1 ? x1 + (x2 - x1) * 0.75 : x2, ey = kind === 1 ? y1 + (y2 - y1) * 0.75 : y2;
    ctx.lineTo(ex, ey); ctx.stroke(); ctx.setLineDash([]);
    if (kind === 1) {
      ctx.lineWidth = 2; ctx.beginPath();
      ctx.moveTo(ex - 4, ey - 4); ctx.lineTo(ex + 4, ey + 4); ctx.moveTo(ex - 4, ey + 4); ctx.lineTo(ex + 4, ey - 4); ctx.stroke();
    } else {
      const ang = Math.atan2(y2 - y1, x2 - x1), h = 7;
      ctx.beginPath(); ctx.moveTo(x2, y2);
      ctx.lineTo(x2 - h * Math.cos(ang - 0.4), y2 - h * Math.sin(ang - 0.4));
      ctx.lineTo(x2 - h * Math.cos(ang + 0.4), y2 - h * Math.sin(ang + 0.4));
      ctx.closePath(); ctx.fill();
    }
    ctx.globalAlpha = 1;
  }

  // The wait-for cycles in view: at the declaration's x, an arc from each
  // waiting process's lane to the lane of the process it waits for.
  // Returns how many edges it drew.
  function drawCycles(wa, wb) {
    let n = 0;
    ctx.save();
    ctx.strokeStyle = C.cycle; ctx.fillStyle = C.cycle; ctx.lineWidth = 2.2; ctx.setLineDash([6, 3]);
    for (const c of cycles) {
      const w = wx(c.at);
      if (w < wa || w > wb) continue;
      const x = X(w);
      c.edges.forEach(([a, b], k) => {
        if (laneOf[a] < 0 || laneOf[b] < 0 || laneOf[a] === laneOf[b]) return;
        const y1 = laneY(a), y2 = laneY(b), bulge = 26 + 10 * k;
        const dir = y2 > y1 ? 1 : -1;
        ctx.beginPath(); ctx.moveTo(x, y1);
        ctx.bezierCurveTo(x + dir * bulge, y1, x + dir * bulge, y2, x, y2); ctx.stroke();
        // The head, pointing at the process waited for.
        ctx.setLineDash([]);
        ctx.beginPath(); ctx.moveTo(x, y2);
        ctx.lineTo(x + dir * 9, y2 - dir * 5); ctx.lineTo(x + dir * 9, y2 + dir * 5); ctx.closePath(); ctx.fill();
        ctx.setLineDash([6, 3]);
        n++;
      });
      ctx.font = "bold 10px DejaVu Sans, Helvetica, Arial, sans-serif";
      ctx.fillText("wait-for cycle", x + 6, laneY(c.edges[0][0]) - 14);
    }
    ctx.restore();
    return n;
  }

  function dropColor(reason) {
    return { partition: C.dropPart, "receiver down": C.dropGone, loss: C.drop }[dropCause(reason)];
  }

  function drawEvent(i, faded) {
    const x = X(wx(i)), y = laneY(evNode[i]), k = evKind[i];
    ctx.globalAlpha = faded && !S.hl[i] ? fadeAlpha() : 1;
    switch (k) {
      case K.output: dot(x, y, 4.2, C.output); break;
      case K.input:
        ctx.fillStyle = C.input; ctx.beginPath();
        ctx.moveTo(x - 4.5, y - 4); ctx.lineTo(x + 4.5, y - 4); ctx.lineTo(x, y + 4); ctx.closePath(); ctx.fill(); break;
      case K.timer:
        ctx.strokeStyle = "#7d8790"; ctx.lineWidth = 1.6; ctx.beginPath(); ctx.moveTo(x, y - 6); ctx.lineTo(x, y + 6); ctx.stroke(); break;
      case K.crash: case K.leave:
        ctx.strokeStyle = "#111"; ctx.lineWidth = 2.2; ctx.beginPath();
        ctx.moveTo(x - 5, y - 5); ctx.lineTo(x + 5, y + 5); ctx.moveTo(x - 5, y + 5); ctx.lineTo(x + 5, y - 5); ctx.stroke(); break;
      case K.start: case K.join: ctx.fillStyle = "#55606b"; ctx.fillRect(x - 3, y - 3, 6, 6); break;
      case K.recover:
        ctx.fillStyle = "#fff"; ctx.strokeStyle = C.ink; ctx.lineWidth = 1.8;
        ctx.beginPath(); ctx.arc(x, y, 4, 0, 2 * Math.PI); ctx.fill(); ctx.stroke(); break;
      case K.drop: break; // drawn by its arrow
      default: dot(x, y, 2.4, typeColor(evType[i]));
    }
    ctx.globalAlpha = 1;
    if (S.hl && (S.hl[i] === 1 || S.hl[i] === 2)) ring(i, S.hl[i] === 1 ? C.past : C.future, 6, 2);
  }

  // How much of the rest is drawn while something is highlighted: a
  // causal past and future stand out more than a counterexample, which is
  // read against its surroundings.
  const fadeAlpha = () => S.viol >= 0 ? 0.4 : 0.15;

  function dot(x, y, r, color) { ctx.fillStyle = color; ctx.beginPath(); ctx.arc(x, y, r, 0, 2 * Math.PI); ctx.fill(); }
  function ring(i, color, r, w) {
    const x = X(wx(i)), y = laneY(evNode[i]);
    ctx.strokeStyle = color; ctx.lineWidth = w; ctx.beginPath(); ctx.arc(x, y, r, 0, 2 * Math.PI); ctx.stroke();
  }

  // Event density per lane, in 2-pixel bins: the level of detail when too
  // many events are in view to draw each.
  function drawDensity(lo, hi, lh) {
    const bins = Math.ceil((W - LEFT) / 2) + 1;
    const counts = new Map();
    const o = order();
    for (let j = lo; j < hi; j++) {
      const i = o[j];
      if (!eventShown(i) || !isProcessKind(evKind[i])) continue;
      const p = evNode[i];
      let c = counts.get(p);
      if (!c) { c = new Uint32Array(bins); counts.set(p, c); }
      c[Math.max(0, Math.min(bins - 1, Math.floor((X(wx(i)) - LEFT) / 2)))]++;
    }
    // Eight shades, each filled as one path: a few fills per frame rather
    // than one per bin.
    const LEVELS = 8, paths = Array.from({ length: LEVELS }, () => new Path2D());
    counts.forEach((c, p) => {
      const y = laneY(p), h = Math.max(4, lh * 0.6);
      let peak = 1;
      for (let b = 0; b < bins; b++) peak = Math.max(peak, c[b]);
      const scale = (LEVELS - 1) / Math.log1p(peak);
      for (let b = 0; b < bins; b++) {
        if (c[b]) paths[Math.round(Math.log1p(c[b]) * scale)].rect(LEFT + 2 * b, y - h / 2, 2, h);
      }
    });
    ctx.fillStyle = "#2f6aa8";
    paths.forEach((path, l) => { ctx.globalAlpha = 0.25 + 0.75 * l / (LEVELS - 1); ctx.fill(path); });
    ctx.globalAlpha = 1;
  }

  // Labels placed by local crowding: each label takes a box; one that
  // would overlap a box already taken is left out (its text stays in the
  // tooltip and the panel). Message labels first at their arrow's middle,
  // then the outputs' and inputs' above their event. Returns how many it drew.
  function drawLabels(events) {
    // The boxes taken, by 64-pixel cell (a number: column × 2²⁰ + row).
    const taken = new Map(), CELL = 64, ROWS = 1 << 20;
    const take = (x0, y0, x1, y1) => {
      const cx0 = Math.floor(x0 / CELL), cx1 = Math.floor(x1 / CELL), cy0 = Math.floor(y0 / CELL), cy1 = Math.floor(y1 / CELL);
      for (let cx = cx0; cx <= cx1; cx++) for (let cy = cy0; cy <= cy1; cy++) {
        const boxes = taken.get(cx * ROWS + cy);
        if (boxes) for (const b of boxes) if (x0 < b[2] && b[0] < x1 && y0 < b[3] && b[1] < y1) return false;
      }
      const box = [x0, y0, x1, y1];
      for (let cx = cx0; cx <= cx1; cx++) for (let cy = cy0; cy <= cy1; cy++) {
        const key = cx * ROWS + cy, boxes = taken.get(key);
        if (boxes) boxes.push(box); else taken.set(key, [box]);
      }
      return true;
    };
    // A label wholly outside the diagram still takes its box (so what is
    // drawn does not depend on it), but is not painted.
    const seen = (x0, y0, x1, y1) => x1 > LEFT && x0 < W && y1 > TOP && y0 < H;
    ctx.font = LABEL_FONT;
    ctx.textBaseline = "middle";
    // Events' own places first, so no label covers an event.
    for (const i of events) { const x = X(wx(i)), y = laneY(evNode[i]); take(x - 4, y - 4, x + 4, y + 4); }
    let n = 0, drawn = 0;
    for (const a of drawnArrows) {
      if (n++ > LABEL_BUDGET) break;
      const s = arS[a], r = arR[a];
      if (r < 0) continue;
      const [x1, y1, x2, y2] = arrowEnds(a);
      if (Math.abs(x2 - x1) + Math.abs(y2 - y1) < 40) continue;
      const text = clip(E[s].label || E[s].type || "", 28);
      if (!text) continue;
      const w = labelWidth(text), mx = (x1 + x2) / 2, my = (y1 + y2) / 2;
      if (!take(mx - w / 2 - 2, my - 7, mx + w / 2 + 2, my + 7)) continue;
      drawn++;
      if (!seen(mx - w / 2 - 2, my - 7, mx + w / 2 + 2, my + 7)) continue;
      ctx.globalAlpha = S.hl && !(S.hl[s] && S.hl[r]) ? fadeAlpha() + 0.1 : 1;
      ctx.fillStyle = "rgba(255,255,255,0.85)"; ctx.fillRect(mx - w / 2 - 2, my - 6, w + 4, 12);
      ctx.fillStyle = typeColor(evType[s]); ctx.fillText(text, mx - w / 2, my);
    }
    for (const i of events) {
      const text = clip(E[i].label || E[i].type || "", 28);
      if (!text) continue;
      const x = X(wx(i)), y = laneY(evNode[i]) - 11, w = labelWidth(text);
      if (!take(x - w / 2 - 2, y - 6, x + w / 2 + 2, y + 6)) continue;
      drawn++;
      if (!seen(x - w / 2 - 2, y - 6, x + w / 2 + 2, y + 6)) continue;
      ctx.globalAlpha = S.hl && !S.hl[i] ? fadeAlpha() + 0.1 : 1;
      ctx.fillStyle = "rgba(255,255,255,0.85)"; ctx.fillRect(x - w / 2 - 2, y - 6, w + 4, 12);
      ctx.fillStyle = evKind[i] === K.output ? C.output : C.input; ctx.fillText(text, x - w / 2, y);
    }
    ctx.globalAlpha = 1; ctx.textBaseline = "alphabetic";
    return drawn;
  }

  // The labels' font, and each label text's width in it, measured once: a
  // pan places the same labels again every frame (zoomed in on a large
  // run, some 1,400 measurements a frame otherwise).
  const LABEL_FONT = "10px DejaVu Sans, Helvetica, Arial, sans-serif";
  const labelWidths = new Map();
  function labelWidth(text) {
    let w = labelWidths.get(text);
    if (w === undefined) { w = ctx.measureText(text).width; labelWidths.set(text, w); }
    return w;
  }

  // Process names in a gutter that stays put while the diagram pans;
  // returns how many it drew.
  function drawLaneNames(lh) {
    ctx.fillStyle = "#f7f8fa"; ctx.fillRect(0, 0, LEFT, H);
    ctx.strokeStyle = "#ddd"; ctx.beginPath(); ctx.moveTo(LEFT + 0.5, 0); ctx.lineTo(LEFT + 0.5, H); ctx.stroke();
    ctx.font = "bold 11px DejaVu Sans, Helvetica, Arial, sans-serif"; ctx.fillStyle = "#555";
    ctx.textBaseline = "middle";
    const every = Math.ceil(14 / lh);
    let n = 0;
    lanes.forEach((ln, r) => {
      if (r % every) return;
      const y = TOP + (r + 0.5) * lh - S.scrollY;
      if (y < TOP || y > H) return;
      n++;
      if (!ln.group && S.picked.has(ln.procs[0])) { ctx.fillStyle = "#cfe0f5"; ctx.fillRect(2, y - 8, LEFT - 4, 16); }
      ctx.fillStyle = ln.group ? "#2f6aa8" : "#555";
      ctx.fillText(clip(ln.name, 9), 8, y);
    });
    ctx.textBaseline = "alphabetic";
    ctx.fillStyle = "#999"; ctx.font = "10px DejaVu Sans, Helvetica, Arial, sans-serif";
    ctx.fillText(S.layout === "time" ? "time" : "Lamport", 6, 18);
    return n;
  }

  // ------------------------------------------------------------ the panel

  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
  const clip = (s, n) => s.length <= n ? s : s.slice(0, n - 1) + "…";

  function fmtNS(ns) {
    const a = Math.abs(ns);
    const f = (v, u) => (+v.toFixed(3)).toString() + u;
    if (a >= 1e9) return f(ns / 1e9, "s");
    if (a >= 1e6) return f(ns / 1e6, "ms");
    if (a >= 1e3) return f(ns / 1e3, "µs");
    return Math.round(ns) + "ns";
  }

  // What an event is, in one line: "#12 p2 recv REQ(ts=4,p1) from p1".
  function eventLine(i) {
    const e = E[i];
    let s = `#${i} ${laneName(evNode[i])} ${e.kind}`;
    if (e.label || e.type) s += " " + (e.label || e.type);
    if (e.kind === "send" || e.kind === "dup") s += ` to ${laneName(evPeer[i])}`;
    if (e.kind === "recv" || e.kind === "drop") s += ` from ${laneName(evPeer[i])}`;
    return s;
  }

  // fmtVC renders a vector timestamp: "[2, 1, 0]", or, in a trace whose
  // processes join (header.ids), where a vector is an object of the
  // entries of the processes it has heard of, keyed by process ID, its
  // nonzero entries by process: "{p0:3, p7:1}". The tooltip writes an
  // array as the CLI does, without spaces (sep ",").
  function fmtVC(vc, sep = ", ") {
    if (!DATA.header.ids && Array.isArray(vc)) return "[" + vc.join(sep) + "]";
    const parts = [];
    for (const [p, v] of Object.entries(vc)) if (v) parts.push("p" + p + ":" + v);
    return "{" + parts.join(", ") + "}";
  }

  function showEvent(i) {
    const box = document.getElementById("event");
    if (i < 0) { box.textContent = "Click an event, or step with ← and →."; return; }
    const e = E[i], rows = [];
    const row = (k, v) => rows.push(`<tr><td>${esc(k)}</td><td>${v}</td></tr>`);
    row("time", esc(fmtNS(evT[i])) + (origin ? " after the first event" : "") + (DATA.epoch ? " after " + esc(DATA.epoch) : ""));
    row("process", laneName(evNode[i]) + (e.svc ? " · " + esc(e.svc) : ""));
    row("kind", esc(e.kind));
    if (e.type) row("type", esc(e.type));
    if (e.label) row("label", esc(e.label));
    if (e.msg) row("message", String(e.msg));
    if (evPeer[i] >= 0 && e.msg) row(e.kind === "send" || e.kind === "dup" ? "to" : "from", laneName(evPeer[i]));
    if (e.reason) row("reason", esc(e.reason));
    if (isProcessKind(evKind[i])) row("Lamport", String(e.lamport));
    row("local clock", esc(fmtNS(e.local - origin)));
    if (e.vc && Object.keys(e.vc).length) row("vector clock", "<code>" + esc(fmtVC(e.vc)) + "</code>");
    if (sendOf[i] >= 0) row("sent", `#${sendOf[i]} at ${esc(fmtNS(evT[sendOf[i]]))} (${esc(fmtNS(evT[i] - evT[sendOf[i]]))} before)`);
    if (fates.has(i)) row("received", fates.get(i).map((r) => `#${r} ${E[r].kind} at ${esc(fmtNS(evT[r]))}`).join("<br>"));
    let html = `<div class="what">${esc(eventLine(i))}</div>`;
    if (violOf.has(i)) html += `<div class="in-viol">in the counterexample of ${esc(violOf.get(i).join(", "))}</div>`;
    (cyclesAt.get(i) || []).forEach((c) => { html += `<div class="cycle">wait-for cycle (${esc(c.by)}): ${esc(cycleText(c))}</div>`; });
    html += `<table>${rows.join("")}</table>`;
    const st = stateAt(i);
    if (st >= 0) {
      html += `<h2>State of ${laneName(evNode[i])}</h2><div id="state">` +
        (st < i ? `<div class="as-of">as of #${st}, its step before</div>` : st > i ? `<div class="as-of">as of #${st}, the end of its step</div>` : "") +
        stateTable(E[st].state) + "</div>";
    }
    if (e.data !== undefined) html += `<h2>Data</h2><pre>${esc(JSON.stringify(e.data, null, 2))}</pre>`;
    if (S.hl && S.viol < 0) {
      let past = 0, fut = 0;
      for (let j = 0; j < N; j++) { if (S.hl[j] === 1) past++; else if (S.hl[j] === 2) fut++; }
      html += `<p><span style="color:${C.past}">●</span> ${past} events in its causal past, <span style="color:${C.future}">●</span> ${fut} in its future</p>`;
    }
    box.innerHTML = html;
  }

  // A step of a process (one call of its handler) begins with the event
  // that called it; its events follow on its lane until the next step.
  const beginsStep = (k) => k === K.recv || k === K.timer || k === K.input || k === K.start || k === K.recover || k === K.join;
  // The event whose recorded state (proc.Describer, cohort sim --states)
  // is its process's at event i. A state is recorded on the last event of
  // each step, as it is once the step is over: at i, the one of i's step
  // (a delivery shows the balance it left); failing that (a trace cut
  // short in the middle of a step), the last one on its lane before i.
  // -1 if none since the process (re)started.
  function stateAt(i) {
    if (!isProcessKind(evKind[i])) return -1;
    for (let j = i; j >= 0; j = nextOn[j]) {
      const k = evKind[j];
      if (j !== i && (beginsStep(k) || k === K.crash || k === K.leave)) break;
      if (E[j].state !== undefined) return j;
      if (k === K.crash || k === K.leave) break;
    }
    for (let j = i; j >= 0; j = prevOn[j]) {
      if (E[j].state !== undefined) return j;
      const k = evKind[j];
      if (k === K.crash || k === K.leave || k === K.start || k === K.recover || k === K.join) return -1;
    }
    return -1;
  }
  // A described state as a table: one row per field, lists joined.
  function stateTable(v) {
    const show = (x) => Array.isArray(x) ? (x.length ? x.map((y) => typeof y === "string" ? y : JSON.stringify(y)).join(", ") : "—")
      : typeof x === "string" ? x : JSON.stringify(x);
    if (v === null || typeof v !== "object" || Array.isArray(v)) return `<pre>${esc(show(v))}</pre>`;
    return "<table>" + Object.keys(v).map((k) => `<tr><td>${esc(k)}</td><td>${esc(show(v[k]))}</td></tr>`).join("") + "</table>";
  }

  // ---------------------------------------------------------- interaction

  // The causal past and future of event i: everything that happened
  // before it (Lamport's happened-before: program order, and each send
  // before its receipts) and everything after it.
  function causal(i) {
    const hl = new Uint8Array(N);
    const walk = (start, mark, next) => {
      const stack = [start];
      while (stack.length) {
        const j = stack.pop();
        for (const n of next(j)) if (n >= 0 && !hl[n]) { hl[n] = mark; stack.push(n); }
      }
    };
    walk(i, 1, (j) => [prevOn[j], evKind[j] === K.recv ? sendOf[j] : -1]);
    walk(i, 2, (j) => {
      const out = [nextOn[j]];
      if (evKind[j] === K.send && fates.has(j)) for (const r of fates.get(j)) out.push(r);
      return out;
    });
    hl[i] = 3;
    return hl;
  }

  function setHighlight(hl) {
    S.hl = hl; S.hlCount = 0;
    if (hl) for (let j = 0; j < N; j++) if (hl[j]) S.hlCount++;
  }

  function select(i) {
    if (i < 0 || i >= N) return;
    S.viol = -1; markActiveCheck();
    setHighlight(causal(i));
    jump(i);
  }

  // Make event i current: show it in the panel, and bring it into view.
  function jump(i) {
    if (i < 0 || i >= N) return;
    S.cur = i;
    const x = X(wx(i));
    if (x < LEFT + 20 || x > W - RIGHT - 20) S.x0 = wx(i) - (W - LEFT) / 2 / S.k;
    const y = laneY(evNode[i]);
    if (laneOf[evNode[i]] >= 0 && (y < TOP + 10 || y > H - 20)) S.scrollY += y - (TOP + H) / 2;
    showEvent(i);
    draw();
  }

  // Step n events forward (or back), over the events shown.
  function step(n) {
    let i = S.cur, dir = n < 0 ? -1 : 1;
    for (let left = Math.abs(n); left > 0;) {
      i += dir;
      if (i < 0 || i >= N) return;
      if (eventShown(i)) left--;
    }
    jump(i);
  }

  function selectViolation(k) {
    const c = checks[k];
    if (!c || c.ok || !c.events || !c.events.length) return;
    S.viol = k; markActiveCheck();
    const hl = new Uint8Array(N);
    let a = Infinity, b = -Infinity, first = N;
    c.events.forEach((i) => {
      if (i < 0 || i >= N) return;
      hl[i] = 4; a = Math.min(a, wx(i)); b = Math.max(b, wx(i)); first = Math.min(first, i);
      if (laneOf[evNode[i]] < 0) { S.procOn[evNode[i]] = 1; }
    });
    layoutLanes(); syncProcBoxes();
    setHighlight(hl);
    if (first < N) {
      // Zoom to the counterexample, with room around it.
      const span = Math.max(b - a, S.layout === "time" ? 1000 : 4);
      S.k = (W - LEFT - RIGHT) / (span * 1.4);
      S.x0 = a - span * 0.2;
      S.cur = first;
      showEvent(first);
    }
    draw();
  }

  // Zoom to a wait-for cycle, its lanes shown, its declaration current.
  function showCycle(c) {
    c.edges.forEach(([a, b]) => { S.procOn[a] = 1; S.procOn[b] = 1; });
    layoutLanes(); syncProcBoxes();
    const w = wx(c.at), span = S.layout === "time" ? Math.max((tmax - origin) / 20, 1000) : 20;
    S.k = (W - LEFT - RIGHT) / span; S.x0 = w - span / 2;
    jump(c.at);
  }

  function clear() {
    setHighlight(null); S.viol = -1; markActiveCheck(); draw();
  }

  // The event under the pointer (within 8 pixels), or -1.
  function pick(mx, my) {
    const lo = lower(S.x0 + (mx - 8 - LEFT) / S.k), hi = lower(S.x0 + (mx + 8 - LEFT) / S.k);
    const o = order();
    let best = -1, bd = 8 * 8;
    for (let j = lo; j < hi && j < lo + 5000; j++) {
      const i = o[j];
      if (!eventShown(i)) continue;
      const dx = X(wx(i)) - mx, dy = laneY(evNode[i]) - my, d = dx * dx + dy * dy;
      if (d < bd || d === bd && (i === S.cur || best < 0)) { bd = d; best = i; }
    }
    return best;
  }

  // A click on a lane's name picks it to be collapsed (or unpicks it); on
  // a collapsed group's name, expands that group.
  function pickLane(my) {
    const r = Math.floor((my - TOP + S.scrollY) / laneH());
    const ln = lanes[r];
    if (!ln) return;
    if (ln.group) {
      const g = groupOf[ln.procs[0]];
      groups.splice(g, 1); groupOf.fill(-1);
      groups.forEach((m, k) => m.forEach((q) => { groupOf[q] = k; }));
      layoutLanes();
    } else if (S.picked.has(ln.procs[0])) S.picked.delete(ln.procs[0]);
    else S.picked.add(ln.procs[0]);
    syncCollapse(); draw();
  }
  function syncCollapse() {
    document.getElementById("collapse").disabled = S.picked.size < 2;
    document.getElementById("expand").disabled = groups.length === 0;
  }

  // The arrow under the pointer (within 4 pixels), or -1.
  function pickArrow(mx, my) {
    let best = -1, bd = 16;
    for (const a of drawnArrows) {
      const [x1, y1, x2, y2] = arrowEnds(a);
      const dx = x2 - x1, dy = y2 - y1, len = dx * dx + dy * dy || 1;
      const u = Math.max(0, Math.min(1, ((mx - x1) * dx + (my - y1) * dy) / len));
      const ex = x1 + u * dx - mx, ey = y1 + u * dy - my, d = ex * ex + ey * ey;
      if (d < bd) { bd = d; best = a; }
    }
    return best;
  }

  function arrowTip(a) {
    const s = arS[a], r = arR[a], e = E[s];
    const lines = [`${e.label || e.type || "message"}  ${laneName(evNode[s])} → ${laneName(evPeer[s])}  (msg ${e.msg})`];
    lines.push(`sent #${s} at ${fmtNS(evT[s])}, L=${e.lamport}` + (e.vc ? ` VC=${fmtVC(e.vc, ",")}` : ""));
    if (r >= 0) {
      const f = E[r];
      if (f.kind === "recv") lines.push(`received #${r} at ${fmtNS(evT[r])} (after ${fmtNS(evT[r] - evT[s])}), L=${f.lamport}` + (f.vc ? ` VC=${fmtVC(f.vc, ",")}` : ""));
      else lines.push(`lost #${r} at ${fmtNS(evT[r])}` + (f.reason ? ` (${f.reason})` : ""));
    } else lines.push("still in flight at the end of the run");
    if (e.data !== undefined) lines.push(clip(JSON.stringify(e.data), 600));
    return lines.join("\n");
  }

  const tip = document.getElementById("tip");
  function showTip(text, mx, my) {
    if (!text) { tip.hidden = true; return; }
    tip.textContent = text; tip.hidden = false;
    tip.style.left = Math.min(mx + 14, W - 300) + "px"; tip.style.top = (my + 14) + "px";
  }

  let drag = null;
  cv.addEventListener("mousedown", (ev) => {
    drag = { x: ev.offsetX, y: ev.offsetY, x0: S.x0, sy: S.scrollY, moved: false };
    cv.classList.add("dragging");
  });
  window.addEventListener("mouseup", (ev) => {
    if (!drag) return;
    cv.classList.remove("dragging");
    const d = drag; drag = null;
    if (!d.moved && ev.target === cv && ev.offsetX < LEFT) { pickLane(ev.offsetY); return; }
    if (!d.moved && ev.target === cv) { const i = pick(ev.offsetX, ev.offsetY); if (i >= 0) select(i); }
  });
  cv.addEventListener("mousemove", (ev) => {
    if (drag) {
      const dx = ev.offsetX - drag.x, dy = ev.offsetY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
      S.x0 = drag.x0 - dx / S.k; S.scrollY = drag.sy - dy;
      showTip("");
      request();
      return;
    }
    const i = pick(ev.offsetX, ev.offsetY);
    if (i >= 0) {
      const data = E[i].data !== undefined ? "\n" + clip(JSON.stringify(E[i].data), 600) : "";
      showTip(eventLine(i) + ` at ${fmtNS(evT[i])}` + data, ev.offsetX, ev.offsetY);
      return;
    }
    const a = pickArrow(ev.offsetX, ev.offsetY);
    showTip(a >= 0 ? arrowTip(a) : "", ev.offsetX, ev.offsetY);
  });
  cv.addEventListener("mouseleave", () => showTip(""));
  cv.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    if (ev.shiftKey) { S.scrollY += ev.deltaY; request(); return; }
    const w = S.x0 + (ev.offsetX - LEFT) / S.k;
    S.k *= Math.exp(-ev.deltaY * 0.0015);
    S.x0 = w - (ev.offsetX - LEFT) / S.k;
    request();
  }, { passive: false });
  window.addEventListener("keydown", (ev) => {
    if (ev.target && (ev.target.tagName === "INPUT" || ev.target.tagName === "SELECT")) return;
    if (ev.key === "ArrowRight") { step(1); ev.preventDefault(); }
    else if (ev.key === "ArrowLeft") { step(-1); ev.preventDefault(); }
    else if (ev.key === "Home") { fit(); draw(); }
    else if (ev.key === "Escape") { if (S.figure >= 0) showFigure(-1); else clear(); }
  });
  window.addEventListener("resize", () => { resize(); draw(); });
  document.getElementById("fit").onclick = () => { fit(); draw(); };
  document.getElementById("prev").onclick = () => step(-1);
  document.getElementById("next").onclick = () => step(1);
  document.getElementById("clear").onclick = clear;
  document.getElementById("collapse").onclick = () => { collapse([...S.picked]); syncCollapse(); };
  document.getElementById("expand").onclick = () => { expand(); syncCollapse(); };
  document.getElementById("layout").onchange = (ev) => setLayout(ev.target.value);
  function setLayout(m) {
    S.layout = m === "lamport" ? "lamport" : "time";
    document.getElementById("layout").value = S.layout;
    fit(); draw();
  }

  // ------------------------------------------------------------ the lists

  function buildLists() {
    const h = DATA.header;
    document.getElementById("title").textContent = DATA.title;
    document.title = DATA.title + " — Cohort viewer";
    document.getElementById("info").textContent =
      `${nProc} processes · ${N.toLocaleString("en")} events · ${nArrows.toLocaleString("en")} messages · ${fmtNS(tmax - origin)}` +
      (h.seed ? ` · seed ${h.seed}` : "") + (DATA.epoch ? ` · from ${DATA.epoch}` : "");

    const ul = document.getElementById("checks");
    if (!checks.length) ul.innerHTML = "<li>no checker results</li>";
    checks.forEach((c, k) => {
      const li = document.createElement("li");
      const violated = !c.ok && c.status !== "unknown";
      li.className = c.ok ? "ok" : c.status === "unknown" ? "unknown" : c.promised ? "violation" : "violation soft";
      li.dataset.k = k;
      li.innerHTML = `<span class="status">${c.ok ? "✓" : c.status === "unknown" ? "?" : "✗"}</span> <b>${esc(c.name)}</b> ${esc(c.status)}` +
        (!c.promised && violated ? " (not promised)" : "") +
        (c.events && c.events.length ? ` · ${c.events.length} events` : "") +
        (c.detail ? `<div class="detail">${esc(clip(c.detail, 300))}</div>` : "");
      if (!c.ok && c.events && c.events.length) li.onclick = () => selectViolation(k);
      ul.appendChild(li);
    });

    const cl = document.getElementById("cycles");
    cycles.forEach((c) => {
      const li = document.createElement("li");
      li.innerHTML = `<b>${esc(cycleText(c))}</b><div class="detail">${esc(c.by)} at ${esc(fmtNS(evT[c.at]))} (#${c.at})</div>`;
      li.onclick = () => showCycle(c);
      cl.appendChild(li);
    });
    document.getElementById("cycles-section").hidden = cycles.length === 0;

    const fl = document.getElementById("figures");
    figures.forEach((f, k) => {
      const li = document.createElement("li");
      li.textContent = f.title;
      li.dataset.k = k;
      li.onclick = () => showFigure(S.figure === k ? -1 : k);
      fl.appendChild(li);
    });
    document.getElementById("figures-section").hidden = figures.length === 0;

    const tl = document.getElementById("types");
    types.forEach((t, k) => {
      if (k > TYPE_COLORS.length) return;
      const name = k === TYPE_COLORS.length ? `${types.length - TYPE_COLORS.length} other types` : (t || "(no type)");
      const li = document.createElement("li");
      li.innerHTML = `<label><input type="checkbox" checked data-type="${k}"> <span class="swatch" style="background:${typeColor(k)}"></span>${esc(clip(name, 30))}</label>`;
      li.querySelector("input").onchange = (ev) => { S.typeOn[k] = ev.target.checked ? 1 : 0; draw(); };
      tl.appendChild(li);
    });
    if (!types.length) tl.innerHTML = "<li>no messages</li>";

    const pl = document.getElementById("procs");
    for (let p = 0; p < nProc && p < 4096; p++) {
      const li = document.createElement("li");
      li.innerHTML = `<label><input type="checkbox" checked data-proc="${p}"> ${laneName(p)}</label>`;
      li.querySelector("input").onchange = (ev) => { S.procOn[p] = ev.target.checked ? 1 : 0; layoutLanes(); draw(); };
      pl.appendChild(li);
    }
    const all = (on) => { S.procOn.fill(on); layoutLanes(); syncProcBoxes(); draw(); };
    document.getElementById("all-procs").onclick = () => all(1);
    document.getElementById("no-procs").onclick = () => all(0);

    const legend = [
      ["output", `<span style="color:${C.output}">●</span>`], ["input", `<span style="color:${C.input}">▼</span>`],
      ["timer", "<span style='color:#7d8790'>|</span>"], ["crash ✕ / down", `<span class="swatch" style="height:9px;background:${C.crashed}"></span>`],
      ...(Object.keys(dropCauses).length ? Object.keys(dropCauses).sort() : ["loss"]).map((c) => [`lost (${c})`, `<span style="color:${dropColor(c === "receiver down" ? "receiver crashed" : c)}">- - ✕</span>`]),
      ["in flight at the end", `<span style="color:${C.pending}">·····</span>`],
      ["partition", `<span class="swatch" style="height:9px;background:${C.partition}"></span>`],
      ["pause / slow", `<span class="swatch" style="height:9px;background:${C.pause}"></span>`],
      ["violated (promised)", `<span style="color:${C.mark}">◯</span>`], ["violated (not promised)", `<span style="color:${C.soft}">◯</span>`],
      ["wait-for cycle", `<span style="color:${C.cycle}">- - ▶</span>`],
      ["causal past", `<span style="color:${C.past}">◯</span>`], ["causal future", `<span style="color:${C.future}">◯</span>`],
    ];
    document.getElementById("legend").innerHTML = legend.map(([t, s]) => `<li>${s} ${esc(t)}</li>`).join("");
  }
  function syncProcBoxes() {
    document.querySelectorAll("#procs input").forEach((b) => { b.checked = !!S.procOn[+b.dataset.proc]; });
  }
  // Show figure k over the diagram (-1: none). The figure is an SVG
  // document the page carries (viewer.Figure), made by Cohort itself.
  function showFigure(k) {
    const box = document.getElementById("figure");
    S.figure = k >= 0 && k < figures.length ? k : -1;
    document.querySelectorAll("#figures li").forEach((li) => li.classList.toggle("active", +li.dataset.k === S.figure));
    if (S.figure < 0) { box.hidden = true; box.innerHTML = ""; return; }
    box.innerHTML = `<button class="close" title="Back to the diagram (Esc)">close</button>` + figures[S.figure].svg;
    box.querySelector(".close").onclick = () => showFigure(-1);
    box.hidden = false;
  }
  function markActiveCheck() {
    document.querySelectorAll("#checks li").forEach((li) => li.classList.toggle("active", +li.dataset.k === S.viol));
  }

  // -------------------------------------------------------------- startup

  buildLists();
  syncCollapse();
  phases.lists = performance.now() - started;
  resize();
  fit();
  draw();
  // A link can say what to show: #layout=lamport, #check=ME3 (that
  // violation), #event=185 (that event and its causal past and future).
  function follow(hash) {
    const q = new URLSearchParams(hash.replace(/^#/, ""));
    if (q.get("layout")) setLayout(q.get("layout"));
    if (q.has("check")) selectViolation(checks.findIndex((c) => c.name === q.get("check")));
    if (q.has("event")) select(+q.get("event"));
  }
  follow(location.hash);
  window.addEventListener("hashchange", () => follow(location.hash));
  stats.openMs = performance.now() - started;
  // From the start of the navigation (the page's time origin): fetching
  // and parsing the page, then all of the above.
  stats.readyMs = performance.now();
  stats.phases = phases;

  // The test hook: what is drawn, and the actions of the keys and clicks.
  window.cohortViewer = {
    stats: () => Object.assign({}, stats, { openMs: stats.openMs }),
    step: (n) => { step(n); return S.cur; },
    jump: (i) => { jump(i); return S.cur; },
    select: (i) => { select(i); return S.hlCount; },
    selectViolation: (k) => { selectViolation(k); return S.hlCount; },
    setLayout: (m) => { setLayout(m); return S.layout; },
    // Processes are named by ID, as in the trace.
    filterProcess: (id, on) => { const p = pidx(id); if (p >= 0) S.procOn[p] = on ? 1 : 0; layoutLanes(); syncProcBoxes(); draw(); return lanes.length; },
    filterType: (t, on) => { S.typeOn[Math.min(t, types.length)] = on ? 1 : 0; draw(); return stats.arrows; },
    zoom: (factor) => { const w = S.x0 + (W - LEFT) / 2 / S.k; S.k *= factor; S.x0 = w - (W - LEFT) / 2 / S.k; draw(); return stats; },
    pan: (px) => { S.x0 += px / S.k; draw(); return stats; },
    fit: () => { fit(); draw(); return stats; },
    clear: () => { clear(); return S.hlCount; },
    // Collapse processes into one lane (as picking their names and
    // "collapse" do); expand every group.
    collapse: (ids) => { collapse(ids.map(pidx)); syncCollapse(); return stats; },
    expand: () => { expand(); syncCollapse(); return stats; },
    lanes: () => lanes.map((ln) => ln.name),
    cycles: () => cycles.map((c) => ({ at: c.at, text: cycleText(c), by: c.by, src: c.src })),
    showCycle: (k) => { if (cycles[k]) showCycle(cycles[k]); return stats; },
    // Figures: their titles; show one (-1: back to the diagram).
    figures: () => figures.map((f) => f.title),
    showFigure: (k) => { showFigure(k); return S.figure; },
    // Where event i is drawn, in the page's coordinates (for clicking it).
    where: (i) => { const r = cv.getBoundingClientRect(); return { x: r.left + X(wx(i)), y: r.top + laneY(evNode[i]) }; },
  };
})();
