/* wfbench dashboard: renders the JSON embedded in index.html with the bundled Chart.js. No network. */
(function () {
  "use strict";

  var DATA = JSON.parse(document.getElementById("wfbench-data").textContent);
  var charts = [];

  // ---------------------------------------------------------------------------------------------- helpers

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (v === null || v === undefined || v === false) return;
        if (k === "class") node.className = v;
        else if (k === "text") node.textContent = v;
        else if (k === "dataset") Object.keys(v).forEach(function (d) { node.dataset[d] = v[d]; });
        else node.setAttribute(k, v === true ? "" : v);
      });
    }
    (children || []).forEach(function (c) {
      if (c === null || c === undefined) return;
      node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return node;
  }

  function link(href, text) {
    return href ? el("a", { href: href, target: "_blank", rel: "noopener" }, [text]) : document.createTextNode(text);
  }

  function plural(n, one, many) { return n + " " + (n === 1 ? one : (many || one + "s")); }
  function fmtGap(g) { return g === null || g === undefined ? "–" : g.toFixed(3) + "×"; }
  function fmtUs(v) { return v >= 100 ? v.toFixed(1) : v >= 10 ? v.toFixed(2) : v.toFixed(3); }
  function fmtPct(v) {
    var text = Math.abs(v * 100).toFixed(1);
    return (text === "0.0" ? "±" : v > 0 ? "+" : "−") + text + "%";
  }
  function changeClass(v) { return v === null ? "" : v > 0.005 ? " bad" : v < -0.005 ? " good" : ""; }
  // a judged change: coloured by its verdict (wfbench check / compare), never by its size alone
  function verdictCell(r) {
    var cls = { slower: " bad", faster: " good" }[r.verdict] || "";
    return el("td", { class: "num verdict-cell" + cls, dataset: { verdict: r.verdict || "" } }, [
      r.change === null || r.change === undefined ? "–" : fmtPct(r.change),
      r.verdict_label ? el("span", { class: "verdict-word", text: " " + r.verdict_label })
        : typeof r.standing === "string" && r.standing !== "stable" ? el("span", { class: "verdict-word why", title: r.why || "",
          text: " not judged: " + r.standing }) : null]);
  }
  function gapClass(g) { return g <= 1.0 ? "good" : g <= 1.1 ? "near" : "bad"; }
  function gapWords(g) {
    if (g <= 1.0) return "WarpForth at or faster than CUDA";
    return "WarpForth " + ((g - 1) * 100).toFixed(1) + "% slower than CUDA";
  }
  function css(name) { return getComputedStyle(document.documentElement).getPropertyValue(name).trim(); }
  function alpha(color, a) {
    // color: #rrggbb
    var m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(color);
    if (!m) return color;
    return "rgba(" + parseInt(m[1], 16) + "," + parseInt(m[2], 16) + "," + parseInt(m[3], 16) + "," + a + ")";
  }
  function caseName(c) { return c.case + " v" + c.version; }

  function gapBar(g) {
    // log scale around parity: 1.5x (or 1/1.5) fills half the track
    var frac = Math.min(Math.abs(Math.log(g) / Math.log(1.5)), 1) * 50;
    var span = el("span", { class: g <= 1 ? "good" : "bad" });
    span.style.width = "max(3px, " + frac.toFixed(2) + "%)";
    if (g <= 1) span.style.right = "50%"; else span.style.left = "50%";
    return el("span", { class: "gapbar", "aria-hidden": "true" }, [span]);
  }

  // Every badge names its kind (data-badge); the legend explains each kind the page shows, in words.
  var BADGES = {
    priority: ["P0 / P1", "priority: P0 cases make the headline's geometric mean; P1 cases are timed and charted, not averaged"],
    version: ["v1", "case version: a changed case definition gets a new version and starts a new series"],
    stable: ["stable", "noise (MAD/median of the samples) within the run's threshold"],
    unstable: ["unstable", "noise above the run's threshold: shown (amber triangles), left out of trends, the headline and alerts"],
    throttled: ["throttled", "the GPU throttled while the case was timed and its gap moved with the clock (or no clean pairs could be had): shown, left out of trends, the headline and alerts"],
    "launch-bound": ["launch-bound", "events mode timed the host's launch rate, not the kernel: shown, left out of trends, the headline and alerts"],
    depressed: ["depressed host", "the run's memory clock or power sat below the board's healthy band: shown, left out of trends, the headline and alerts"],
    canonical: ["canonical", "one warpforthc per run, timed against CUDA: the trend the headline follows"],
    label: ["base / head", "base/head run: two warpforthc builds (base = the reference build, head = the build under test) timed interleaved in one run against the same CUDA samples"],
    aa: ["A/A", "A/A run: the CUDA kernel timed against itself; how far it reads from 1.000× is the method's floor, not a WarpForth result"],
    "not-latest": ["not in latest run", "this series has no point from its group's newest run (that run did not time this case, or the case failed there; failed cases are never stored)"],
    superseded: ["superseded by v2", "a newer version of this case exists; its points continue in the newer series"],
  };
  function badge(kind, text, cls) {
    return el("span", { class: "badge" + (cls ? " " + cls : ""), dataset: { badge: kind }, text: text });
  }
  // a row's or point's standing in trends, the word the history gives it (stable, unstable, throttled, launch-bound,
  // depressed host); the badge, the row colour and the counts all read it from here
  function standingOf(r) { return r.standing || (r.status === "unstable" ? "unstable" : "stable"); }
  function statusBadge(r) {
    var k = standingOf(r);  // the legend says what each word means, in words on the page
    return badge(k === "depressed host" ? "depressed" : k, k, k === "stable" ? "ok" : "unstable");
  }
  function kindBadge(s) {
    if (s.kind === "aa") return badge("aa", "A/A floor", "aa");
    if (s.kind === "basehead") return badge("label", s.label + " build", "label");
    return badge("canonical", "canonical", "canonical");
  }

  function caseChips(names) {
    return el("span", { class: "case-set" }, names.map(function (n) { return el("span", { class: "chip mono", text: n }); }));
  }

  function runLine(r, extra) {
    var node = el("div", { class: "hero-sub" }, ["run " + r.date + " UTC"]);
    if (r.commit) {
      node.appendChild(document.createTextNode(" · commit "));
      node.appendChild(link(r.commit_url, r.commit.slice(0, 7)));
    }
    if (r.run_url) {
      node.appendChild(document.createTextNode(" · "));
      node.appendChild(link(r.run_url, "CI run"));
    }
    if (extra) node.appendChild(document.createTextNode(extra));
    return node;
  }

  function sigBox(rows) {
    return el("dl", { class: "sig" }, [].concat.apply([], rows.map(function (kv) {
      return [el("dt", { text: kv[0] }), el("dd", { class: kv[2] ? "mono" : null, text: kv[1] })];
    })));
  }

  // ---------------------------------------------------------------------------------------------- headline

  function renderProblems() {
    if (!DATA.problems.length) return;
    var box = document.getElementById("problems");
    box.hidden = false;
    box.appendChild(el("strong", { text: plural(DATA.problems.length, "file") + " in the history could not be used:" }));
    box.appendChild(el("ul", null, DATA.problems.map(function (p) { return el("li", { text: p }); })));
  }

  function casesTable(rows) {
    var body = rows.map(function (c) {
      return el("tr", { class: standingOf(c) === "stable" ? "ok" : "unstable", dataset: { series: c.series, standing: standingOf(c) } }, [
        el("td", null, [el("a", { href: "#s-" + c.series, text: c.case }), " ", badge("version", "v" + c.version),
          " ", badge("priority", c.priority)]),
        el("td", { class: "num" }, [el("span", { class: "gapcell" }, [el("span", { class: "case-gap " + gapClass(c.gap),
          text: fmtGap(c.gap) }), gapBar(c.gap)])]),
        el("td", { class: "num", text: fmtUs(c.wf) }),
        el("td", { class: "num", text: fmtUs(c.cuda) }),
        el("td", { class: "num", text: (c.noise * 100).toFixed(2) + "%" }),
        verdictCell(c),
        el("td", null, [statusBadge(c)]),
      ]);
    });
    return el("div", { class: "table-scroll" }, [el("table", { class: "cases" }, [
      el("thead", null, [el("tr", null, [
        el("th", { text: "case" }), el("th", { class: "num", text: "gap" }), el("th", { class: "num", text: "WarpForth µs" }),
        el("th", { class: "num", text: "CUDA µs" }), el("th", { class: "num", text: "noise" }),
        el("th", { class: "num", text: "Δ gap vs reference · verdict" }), el("th", { text: "status" }),
      ])]),
      el("tbody", null, body),
    ])]);
  }

  function renderHeadline(h) {
    var g = h.geomean;
    var big = g === null
      ? el("div", { class: "gap-value none", text: h.left_out.length
        ? "no geometric mean: " + plural(h.left_out.length, "P0 case") + " unstable"
        : "no P0 case in the latest run" })
      : el("div", { class: "gap-value " + gapClass(g), text: fmtGap(g) });
    var set = el("div", { class: "geomean-set" }, [
      el("span", { text: (g === null ? "P0 case set of this run, " : "geometric mean of the gaps of ") +
        plural(h.case_set.length, "P0 case") + (g === null ? ": " : ", all stable: ") }),
      caseChips(h.case_set)]);
    var notes = [];
    if (h.left_out.length) {
      notes.push(el("div", { class: "note warn", text: "Unstable in this run: " + h.left_out.join(", ") +
        ". An unstable P0 case withholds the geometric mean; it never leaves the case set silently." }));
    }
    if (h.missing.length) {
      notes.push(el("div", { class: "note warn", text: "Not in this run, but in the one before: " + h.missing.join(", ") +
        " (failed, errored or not run). This run's case set is another one; its mean is not compared with theirs." }));
    }
    var prev = h.previous
      ? el("div", { class: "hero-prev" }, [
        el("span", { class: "num" + changeClass(h.previous.change), text: fmtPct(h.previous.change) }),
        " vs " + fmtGap(h.previous.geomean) + " in the previous run over the same " + plural(h.case_set.length, "case") +
        " (" + h.previous.date + " UTC" + (h.previous.commit ? ", commit " + h.previous.commit.slice(0, 7) : "") + ")"])
      : el("div", { class: "hero-prev", text: g === null ? "" : "first run over this case set: nothing to compare with" });
    if (h.floor !== null && h.floor !== undefined) {
      prev.appendChild(el("div", { class: "floor-note", text: "A/A floor on this board (CUDA against itself): up to " +
        (h.floor * 100).toFixed(2) + "% from 1.000×; a change smaller than that is within the method's floor." }));
    }

    var head = el("div", { class: "hero-main" }, [
      el("div", { class: "eyebrow", text: "Headline · canonical series · " + h.gpu }),
      big,
      g === null ? null : el("div", { class: "verdict " + gapClass(g), text: gapWords(g) }),
      set, prev,
      runLine(h, " · warpforthc " + h.warpforthc),
    ].concat(notes));
    var sig = sigBox([["GPU", h.gpu + " (compute " + h.cc + ")"], ["CUDA side", h.cuda, true],
      ["timing", "paired, interleaved: one warpforthc against CUDA"],
      ["series", "every canonical run on this GPU; base/head and A/A runs are shown below, apart"]]);
    var trend = h.trend.filter(function (t) { return t.same_set && t.geomean !== null; });
    var otherSet = h.trend.filter(function (t) { return !t.same_set; }).length;
    var withheld = h.trend.length - trend.length - otherSet;
    var notDrawn = [];
    if (otherSet) notDrawn.push(plural(otherSet, "run") + " over another case set");
    if (withheld) notDrawn.push(plural(withheld, "run") + " with an unstable P0 case");
    var trendFig = el("figure", { class: "headline-trend" }, [
      el("figcaption", null, [el("strong", { text: "Geometric mean over the runs" }),
        el("span", { text: plural(trend.length, "run") + " over this case set" +
          (notDrawn.length ? "; not drawn: " + notDrawn.join(", ") : "") })]),
      el("div", { class: "chart-box small" }, [el("canvas", { class: "chart-headline", role: "img",
        "aria-label": "geometric-mean gap over the runs" })])]);
    var card = el("article", { class: "platform card headline", dataset: { gpu: h.gpu } }, [
      el("div", { class: "hero" }, [head, el("div", null, [sig, trendFig])]),
      casesTable(h.cases),
      renderWhy(h.diagnostics),
    ]);
    return { card: card, trend: trend };
  }

  function drawHeadlineTrend(card, trend) {
    var colors = palette();
    var canvas = card.querySelector("canvas.chart-headline");
    var chart = new Chart(canvas, {
      type: "line",
      data: { labels: trend.map(function (t) { return t.x; }), datasets: [
        lineSet("geometric mean", trend.map(function (t) { return t.geomean; }), colors.gap)] },
      options: {
        animation: false, responsive: true, maintainAspectRatio: false,
        plugins: { legend: { display: false }, parityLine: { enabled: true, color: colors.faint },
          tooltip: { callbacks: { label: function (item) { return "geometric mean " + fmtGap(item.raw); } } } },
        scales: {
          x: { grid: { display: false }, ticks: { color: colors.muted, maxRotation: 0, autoSkip: true, font: { size: 10 } } },
          y: Object.assign({ grace: "8%", grid: { color: colors.grid }, border: { display: false },
            ticks: { color: colors.muted, font: { size: 10 }, callback: function (v) { return v.toFixed(3) + "×"; } } },
          yRange(trend.map(function (t) { return { g: t.geomean }; }), ["g"])),
        },
      },
      plugins: [parityLine, changeMarks],
    });
    charts.push(chart);
  }

  // "why": what the two kernels look like, and what the GPU did while they were timed (only what results carry)
  function renderWhy(diag) {
    if (!diag || !diag.cases.length) return null;
    var has = function (f) { return diag.cases.some(f); };
    var side = function (c, k) { return [c.wf[k], c.cuda[k]]; };
    var cols = [];
    function pair(title, key, fmt) {
      if (!has(function (c) { return c.wf[key] !== undefined || c.cuda[key] !== undefined; })) return;
      cols.push({ title: title, cell: function (c) {
        var v = side(c, key);
        return v[0] === undefined && v[1] === undefined ? "–" : (v[0] === undefined ? "–" : fmt(v[0])) + " / " +
          (v[1] === undefined ? "–" : fmt(v[1]));
      } });
    }
    var int = function (v) { return String(v); };
    var pct = function (v) { return (v * 100).toFixed(0) + "%"; };
    pair("registers", "registers", int);
    pair("spill bytes", "spill_bytes", int);
    pair("local bytes", "local_bytes", int);
    pair("shared bytes", "shared_bytes", int);
    pair("occupancy", "occupancy", pct);
    pair("of copy bandwidth", "copy_pct", pct);
    pair("of roofline", "roofline", pct);
    if (has(function (c) { return c.wf.mix && c.cuda.mix; })) {
      cols.push({ title: "instruction mix, largest differences (WF − CUDA)", cell: function (c) {
        if (!c.wf.mix || !c.cuda.mix) return "–";
        var classes = Object.keys(Object.assign({}, c.wf.mix, c.cuda.mix));
        var diffs = classes.map(function (k) { return [k, (c.wf.mix[k] || 0) - (c.cuda.mix[k] || 0)]; })
          .filter(function (d) { return d[1] !== 0; })
          .sort(function (a, b) { return Math.abs(b[1]) - Math.abs(a[1]) || (a[0] < b[0] ? -1 : 1); }).slice(0, 3);
        return diffs.length ? diffs.map(function (d) { return d[0] + " " + (d[1] > 0 ? "+" : "−") + Math.abs(d[1]); }).join(", ")
          : "same";
      } });
    }
    var range = function (r, unit) { return r[0] === r[1] ? r[0] + unit : r[0] + "–" + r[1] + unit; };
    [["SM clock", "sm_clock_mhz", " MHz"], ["power", "power_w", " W"], ["temperature", "temperature_c", " °C"]]
      .forEach(function (t) {
        if (has(function (c) { return c.nvml[t[1]]; })) {
          cols.push({ title: t[0] + " while timed", cell: function (c) { return c.nvml[t[1]] ? range(c.nvml[t[1]], t[2]) : "–"; } });
        }
      });
    if (has(function (c) { return c.nvml.throttle; })) {
      cols.push({ title: "throttling", cell: function (c) {
        return !c.nvml.throttle ? "–" : c.nvml.throttle.length ? c.nvml.throttle.join(", ") : "none"; }, cls: function (c) {
        return c.nvml.throttle && c.nvml.throttle.length ? "bad" : ""; } });
    }
    var table = el("table", { class: "why" }, [
      el("thead", null, [el("tr", null, [el("th", { text: "case" })].concat(cols.map(function (c) {
        return el("th", { text: c.title }); })))]),
      el("tbody", null, diag.cases.map(function (c) {
        return el("tr", null, [el("td", { text: caseName(c) })].concat(cols.map(function (col) {
          return el("td", { class: "num " + (col.cls ? col.cls(c) : ""), text: col.cell(c) }); })));
      })),
    ]);
    var g = diag.gpu, gpuBits = [];
    if (g.max_sm_clock_mhz) gpuBits.push("SM clock " + (g.sm_clock_mhz || "?") + " of " + g.max_sm_clock_mhz + " MHz at the start");
    if (g.power_limit_w) gpuBits.push("power limit " + g.power_limit_w + " W");
    if (g.temperature_c) gpuBits.push(g.temperature_c + " °C");
    if (g.copy_gbps) gpuBits.push("device copy " + g.copy_gbps.toFixed(0) + " GB/s");
    return el("details", { class: "why" }, [
      el("summary", { text: "Why: both kernels side by side (WarpForth / CUDA), and the GPU while they were timed" }),
      gpuBits.length ? el("p", { class: "note", text: "GPU: " + gpuBits.join(" · ") + "." }) : null,
      el("div", { class: "table-scroll" }, [table]),
    ]);
  }

  function renderOtherGpu(p) {
    return el("article", { class: "card other-gpu", dataset: { gpu: p.gpu } }, [
      el("h3", null, [p.gpu + " ", el("span", { class: "ver", text: "(compute " + p.cc + ")" }), " ",
        badge("canonical", "canonical", "canonical")]),
      el("div", { class: "other-value" }, [el("b", { class: p.geomean === null ? "" : gapClass(p.geomean), text: fmtGap(p.geomean) }),
        (p.geomean === null ? " no geometric mean (an unstable P0 case) over " : " geometric mean over ") +
        plural(p.case_set.length, "P0 case") + " ", caseChips(p.case_set)]),
      runLine(p, " · warpforthc " + p.warpforthc + " · " + p.cuda),
    ]);
  }

  // each case's gap on every GPU model (the newest canonical run of each), side by side
  function renderModels(m) {
    var head = [el("th", { text: "case" })].concat(m.columns.map(function (c) {
      return el("th", { class: "num", text: c.name }); }));
    var rows = m.rows.map(function (r) {
      return el("tr", null, [el("td", null, [r.case + " ", badge("version", "v" + r.version), " ", badge("priority", r.priority)])]
        .concat(m.columns.map(function (c) {
          var g = r.gaps[c.name];
          return el("td", { class: "num case-gap " + (g === null ? "" : gapClass(g)) + (r.status[c.name] === "unstable" ? " unstable" : ""),
            text: g === null ? "–" : fmtGap(g) });
        })));
    });
    var gm = el("tr", { class: "total" }, [el("td", { text: "geometric mean over each model's P0 cases (none unless all are stable)" })]
      .concat(m.columns.map(function (c) { return el("td", { class: "num", text: fmtGap(c.geomean) }); })));
    return el("article", { class: "card section-card models" }, [
      el("div", { class: "section-head" }, [
        el("div", { class: "eyebrow", text: "Gap per GPU model" }),
        el("p", { class: "explain", text: "Each model's newest canonical run, case by case: " + m.columns.map(function (c) {
          return c.name + " " + c.date + " UTC"; }).join(", ") + ". Every model is its own series." }),
      ]),
      el("div", { class: "table-scroll" }, [el("table", { class: "cases models" }, [
        el("thead", null, [el("tr", null, head)]), el("tbody", null, rows.concat([gm]))])]),
    ]);
  }

  // ---------------------------------------------------------------------------------------------- base/head, A/A

  function renderComparison(c) {
    var labels = c.labels;
    var bh = labels.length === 2 && labels[0] === "base" && labels[1] === "head";
    var rows = c.rows.map(function (r) {
      return el("tr", null, [
        el("td", null, [r.case + " ", badge("version", "v" + r.version), " ", badge("priority", r.priority)])].concat(labels.map(function (lb) {
          var g = r.gaps[lb];
          var st = r.standing ? r.standing[lb] : r.status[lb] === "unstable" ? "unstable" : "stable";
          return el("td", { class: "num" + (st && st !== "stable" ? " unstable" : ""), title: r.why ? r.why[lb] || "" : "" }, [
            g === undefined ? "–" : r.series[lb] ? el("a", { href: "#s-" + r.series[lb], class: "case-gap " + gapClass(g),
              text: fmtGap(g) }) : fmtGap(g)]);
        })).concat(bh ? [verdictCell(r)] : []));
    });
    var gmChange = c.geomeans.base && c.geomeans.head ? c.geomeans.head / c.geomeans.base - 1 : null;
    var gm = el("tr", { class: "total" }, [el("td", { text: c.case_set === null
      ? "geometric mean: none (the builds were timed over different case sets)"
      : "geometric mean over the " + plural(c.case_set.length, "P0 case") + " (none unless all are stable)" })]
      .concat(labels.map(function (lb) { return el("td", { class: "num", text: fmtGap(c.geomeans[lb]) }); }))
      .concat(bh ? [el("td", { class: "num" + changeClass(gmChange), text: gmChange === null ? "–" : fmtPct(gmChange) })] : []));
    var head = [el("th", { text: "case" })].concat(labels.map(function (lb) {
      return el("th", { class: "num" }, [badge("label", lb, "label"), " ", el("span", { class: "mono build", text: c.builds[lb] })]); }))
      .concat(bh ? [el("th", { class: "num", text: "head vs base · verdict" })] : []);
    return el("article", { class: "card section-card comparison", dataset: { run: c.run } }, [
      el("div", { class: "section-head" }, [
        el("div", { class: "eyebrow", text: "Base/head run · " + c.gpu }),
        el("p", { class: "explain", text: "Two warpforthc builds timed interleaved in one run against the same CUDA samples: " +
          labels.map(function (lb) { return lb + " = " + c.builds[lb]; }).join(", ") +
          ". Gaps are each build against CUDA; not part of the headline." }),
        runLine(c, " · " + c.cuda),
      ]),
      el("div", { class: "table-scroll" }, [el("table", { class: "cases compare" }, [
        el("thead", null, [el("tr", null, head)]), el("tbody", null, rows.concat([gm]))])]),
    ]);
  }

  function renderCeilings(rows) {
    var body = rows.map(function (r) {
      return el("tr", { class: r.status === "ok" ? "ok" : "failed" }, [
        el("td", { text: r.series }),
        el("td", { class: "lib" }, [r.library + " " + r.routine + " (" + r.version + ")",
          r.tensor_cores ? el("div", { class: "lib-note", text: "tensor cores: " + r.tensor_cores }) : null]),
        el("td", { class: "num", text: r.wf === null || r.wf === undefined ? "–" : fmtUs(r.wf) }),
        el("td", { class: "num", text: r.cuda === null || r.cuda === undefined ? "–" : fmtUs(r.cuda) }),
        el("td", { class: "num", text: r.ceiling === null || r.ceiling === undefined ? "–" : fmtUs(r.ceiling) }),
        el("td", { class: "num", text: r.ratio === null || r.ratio === undefined ? "–" : r.ratio.toFixed(2) + "×" }),
        el("td", { class: "why", text: r.status + (r.message ? ": " + r.message : "") }),
      ]);
    });
    return el("article", { class: "card section-card ceilings" }, [
      el("div", { class: "section-head" }, [
        el("div", { class: "eyebrow", text: "Library ceilings · the headline run" }),
        el("p", { class: "explain", text: "How far each case is from NVIDIA's library code for the same operation " +
          "(cuBLAS, CUB), timed in the same rounds. WarpForth time / ceiling time: above 1, the library is faster. " +
          "Its own series; never part of the gap, the geomean or a verdict." })]),
      el("div", { class: "table-scroll" }, [el("table", { class: "cases ceiling-table" }, [
        el("thead", null, [el("tr", null, ["series", "library", "WarpForth µs", "CUDA µs", "ceiling µs",
          "WarpForth time / ceiling time", "status"].map(function (t, i) {
          return el("th", { class: i >= 2 && i <= 5 ? "num" : null, text: t }); }))]),
        el("tbody", null, body)])]),
    ]);
  }

  function renderFloor(f) {
    var rows = f.rows.map(function (r) {
      return el("tr", { class: standingOf(r) === "stable" ? "ok" : "unstable", dataset: { standing: standingOf(r) } }, [
        el("td", null, [el("a", { href: "#s-" + r.series, text: r.case }), " ", badge("version", "v" + r.version), " ",
          badge("priority", r.priority)]),
        el("td", { class: "num case-gap", text: fmtGap(r.gap) }),
        el("td", { class: "num", text: fmtUs(r.wf) }), el("td", { class: "num", text: fmtUs(r.cuda) }),
        el("td", { class: "num", text: (r.noise * 100).toFixed(2) + "%" }),
        el("td", null, [statusBadge(r)]),
      ]);
    });
    return el("article", { class: "card section-card floor", dataset: { run: f.run } }, [
      el("div", { class: "section-head" }, [
        el("div", { class: "eyebrow", text: "A/A floor · " + f.gpu }),
        el("p", { class: "explain" }, ["The CUDA kernel timed against itself (A against A′) with the same method. ",
          f.spread === null ? "" : el("strong", { text: "Largest distance from 1.000×: " + (f.spread * 100).toFixed(2) + "%" }),
          f.spread === null ? "" : ". A gap change smaller than this is within the method's floor. Not a WarpForth result."]),
        runLine(f, " · " + f.cuda),
      ]),
      el("div", { class: "table-scroll" }, [el("table", { class: "cases" }, [
        el("thead", null, [el("tr", null, ["case", "A / A′", "CUDA A µs", "CUDA A′ µs", "noise", "status"].map(function (t, i) {
          return el("th", { class: i >= 1 && i <= 4 ? "num" : null, text: t }); }))]),
        el("tbody", null, rows)])]),
    ]);
  }

  function renderLegend() {
    var shown = {};
    document.querySelectorAll("main [data-badge]").forEach(function (b) { shown[b.dataset.badge] = true; });
    var items = Object.keys(BADGES).filter(function (k) { return shown[k]; });
    var legend = document.getElementById("legend");
    legend.hidden = false;  // an empty page has nothing to explain, so no card either
    legend.classList.add("card");
    legend.appendChild(el("h2", { text: "Reading this page" }));
    legend.appendChild(el("p", { class: "explain" }, ["Times are per kernel launch; dates are UTC. Chart x labels are the " +
      "commit and the run time. In the kernel-time charts ", el("span", { class: "ring" }), " is WarpForth (CUDA A in an A/A run) " +
      "and ", el("span", { class: "dot" }), " CUDA, so equal times stay visible as a dot inside a ring. A Δ column " +
      "gives the change of the gap and its verdict as wfbench check (a run against its series) and wfbench compare " +
      "(head against base) judge it: SAME, SLOWER, FASTER or AMBIGUOUS, with what qualifies it."]));
    legend.appendChild(el("dl", { class: "legend" }, [].concat.apply([], items.map(function (k) {
      var cls = { unstable: "unstable", throttled: "unstable", "launch-bound": "unstable", depressed: "unstable", stable: "ok",
        aa: "aa", label: "label", canonical: "canonical" }[k];
      return [el("dt", null, [el("span", { class: "badge" + (cls ? " " + cls : ""), dataset: { legend: k }, text: BADGES[k][0] })]),
        el("dd", { text: BADGES[k][1] })];
    }))));
  }

  // ---------------------------------------------------------------------------------------------- series

  var parityLine = {
    id: "parityLine",
    afterDatasetsDraw: function (chart, args, opts) {
      if (!opts || !opts.enabled) return;
      var y = chart.scales.y;
      if (!y || 1 < y.min || 1 > y.max) return;
      var ctx = chart.ctx, py = y.getPixelForValue(1);
      ctx.save();
      ctx.strokeStyle = opts.color;
      ctx.setLineDash([4, 4]);
      ctx.lineWidth = 1;
      ctx.beginPath();
      ctx.moveTo(chart.chartArea.left, py);
      ctx.lineTo(chart.chartArea.right, py);
      ctx.stroke();
      ctx.fillStyle = opts.color;
      ctx.font = "11px system-ui, sans-serif";
      ctx.textAlign = "right";
      ctx.fillText("parity", chart.chartArea.right - 4, py - 4);
      ctx.restore();
    },
  };

  // the steps of the gap (E-divisive, wfbench_core.review.changepoints): a dashed line just before the first point
  // after each step, labelled with the change
  var changeMarks = {
    id: "changeMarks",
    afterDatasetsDraw: function (chart, args, opts) {
      if (!opts || !opts.marks || !opts.marks.length) return;
      var x = chart.scales.x, area = chart.chartArea, ctx = chart.ctx;
      ctx.save();
      opts.marks.forEach(function (m) {
        var px = (x.getPixelForValue(m.index - 1) + x.getPixelForValue(m.index)) / 2;
        ctx.strokeStyle = opts.color;
        ctx.setLineDash([2, 3]);
        ctx.lineWidth = 1.5;
        ctx.beginPath();
        ctx.moveTo(px, area.top);
        ctx.lineTo(px, area.bottom);
        ctx.stroke();
        ctx.fillStyle = opts.color;
        ctx.font = "11px system-ui, sans-serif";
        ctx.textAlign = "left";
        ctx.fillText("step " + fmtPct(m.change), px + 3, area.top + 11);
      });
      ctx.restore();
    },
  };

  function stepsLine(s) {
    if (!s.change_points || !s.change_points.length) return null;
    return el("p", { class: "steps", dataset: { steps: String(s.change_points.length) } }, ["Steps in the gap: "].concat(
      [].concat.apply([], s.change_points.map(function (m, i) {
        var text = fmtGap(m.gap_before) + " → " + fmtGap(m.gap_after) + " (" + fmtPct(m.change) + ")";
        var where = m.commits ? (m.compare_url ? link(m.compare_url, m.commits) : el("span", { class: "mono", text: m.commits }))
          : document.createTextNode("between two runs");
        return (i ? ["; "] : []).concat([text + " at ", where]);
      }))));
  }

  function pick(points, field, stable) {
    return points.map(function (p) { return isStable(p) === stable ? p[field] : null; });
  }

  function lineSet(label, data, color) {
    return { label: label, data: data, borderColor: color, backgroundColor: color, borderWidth: 2, pointRadius: 3.5,
      pointHoverRadius: 6, pointBackgroundColor: color, spanGaps: true, tension: 0, order: 1 };
  }
  // the first side: a ring, drawn under the second side's dot, so equal values show as a dot in a ring
  function ringSet(label, data, color) {
    var ds = lineSet(label, data, color);
    ds.pointRadius = 7; ds.pointHoverRadius = 9; ds.pointBorderWidth = 2.5; ds.pointBackgroundColor = "rgba(0,0,0,0)";
    ds.order = 2; ds.ring = true;
    return ds;
  }
  function bandSet(label, data, color, fill) {
    return { label: "_" + label, data: data, borderWidth: 0, pointRadius: 0, pointHitRadius: 0, spanGaps: true,
      backgroundColor: alpha(color, 0.16), borderColor: "transparent", fill: fill, order: 3 };
  }
  function unstableSet(label, data, color) {
    return { label: label, data: data, showLine: false, pointStyle: "triangle", pointRadius: 7, pointHoverRadius: 9,
      borderColor: color, backgroundColor: alpha(color, 0.35), borderWidth: 2, order: 0, unstable: true };
  }

  function sideName(s, side) {
    if (s.mode === "aa") return side === "wf" ? "CUDA (A)" : "CUDA (A′)";
    return side === "wf" ? "WarpForth" + (s.label ? " " + s.label : "") : "CUDA";
  }

  function tooltip(s, kind) {
    var points = s.points;
    return {
      callbacks: {
        title: function (items) {
          var p = points[items[0].dataIndex];
          return p.date + " UTC" + (p.commit ? "  ·  " + p.commit.slice(0, 10) : "");
        },
        label: function (item) {
          var ds = item.dataset, p = points[item.dataIndex];
          if (ds.label.charAt(0) === "_") return null;
          if (kind === "gap") {
            return (ds.unstable ? "unstable gap " : "gap ") + fmtGap(p.gap) + "  (p5–p95 of pairs " +
              p.gap_lo.toFixed(3) + "–" + p.gap_hi.toFixed(3) + ")";
          }
          var side = ds.side, v = p[side];
          return (ds.unstable ? "unstable " : "") + sideName(s, side) + " " + fmtUs(v) + " µs  (p5–p95 " +
            fmtUs(p[side + "_lo"]) + "–" + fmtUs(p[side + "_hi"]) + ", MAD " + fmtUs(p[side + "_mad"]) + ")";
        },
        footer: function (items) {
          var p = points[items[0].dataIndex];
          var lines = ["warpforthc " + p.warpforthc, "noise " + (p.noise * 100).toFixed(2) + "% · " + plural(p.samples, "sample")];
          if (!isStable(p)) lines.push((p.status === "ok" ? "throttled or launch-bound" : "unstable") + ": left out of trends and alerts");
          if (p.commit_url || p.run_url) lines.push("click the point to open the " + (p.commit_url ? "commit" : "CI run"));
          return lines;
        },
      },
      footerFont: { weight: "normal" },
      filter: function (item) { return item.dataset.label.charAt(0) !== "_" && item.raw !== null; },
    };
  }

  // never zoom in so far that noise looks like a cliff: the y axis spans at least 20 % of its middle value,
  // so a 3 % move reads as a 3 % move (and the axis still grows to fit whatever the data span)
  var MIN_SPAN = 0.2;

  // ``fields`` are drawn for stable points; an unstable point is drawn at its first field only (no band)
  function yRange(points, fields) {
    var lo = Infinity, hi = -Infinity;
    points.forEach(function (p) {
      var drawn = !p.status || p.status === "ok" ? fields : fields.filter(function (f) { return !/_(lo|hi)$/.test(f); });
      drawn.forEach(function (f) {
        if (p[f] !== null && p[f] !== undefined) { lo = Math.min(lo, p[f]); hi = Math.max(hi, p[f]); }
      });
    });
    var mid = (lo + hi) / 2;
    if (!isFinite(mid) || (hi - lo) >= MIN_SPAN * mid) return {};
    return { suggestedMin: mid * (1 - MIN_SPAN / 2), suggestedMax: mid * (1 + MIN_SPAN / 2) };
  }

  function chartOptions(s, kind, colors, yTitle) {
    var points = s.points;
    var range = kind === "gap" ? yRange(points, ["gap", "gap_lo", "gap_hi"])
      : yRange(points, ["wf", "wf_lo", "wf_hi", "cuda", "cuda_lo", "cuda_hi"]);
    return {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      interaction: { mode: "index", intersect: false },
      onClick: function (evt, elements) {
        if (!elements.length) return;
        var p = points[elements[0].index];
        var url = p.commit_url || p.run_url;
        if (url) window.open(url, "_blank", "noopener");
      },
      plugins: {
        legend: { display: false },
        tooltip: tooltip(s, kind),
        parityLine: { enabled: kind === "gap", color: colors.faint },
        changeMarks: { marks: kind === "gap" ? s.change_points || [] : [], color: colors.text },
      },
      scales: {
        x: { grid: { display: false }, ticks: { color: colors.muted, maxRotation: 0, autoSkip: true, autoSkipPadding: 14 },
          border: { color: colors.line } },
        y: { grace: "8%", suggestedMin: range.suggestedMin, suggestedMax: range.suggestedMax, grid: { color: colors.grid }, border: { display: false },
          title: { display: true, text: yTitle, color: colors.muted, font: { size: 11 } },
          ticks: { color: colors.muted, callback: function (v, i, ticks) {
            var text = Chart.Ticks.formatters.numeric.call(this, v, i, ticks);
            return kind === "gap" ? text + "×" : text;
          } } },
      },
    };
  }

  function palette() {
    return { wf: css("--wf"), cuda: css("--cuda"), gap: css("--gap"), unstable: css("--unstable"), grid: css("--grid"),
      muted: css("--muted"), faint: css("--faint"), line: css("--line"), text: css("--text") };
  }

  function drawCharts(section, s) {
    var colors = palette();
    var pts = s.points;
    var labels = pts.map(function (p) { return p.x; });
    var gapCanvas = section.querySelector("canvas.chart-gap");
    var timeCanvas = section.querySelector("canvas.chart-time");
    var gap = new Chart(gapCanvas, {
      type: "line",
      data: { labels: labels, datasets: [
        bandSet("gap p5", pick(pts, "gap_lo", true), colors.gap, false),
        bandSet("gap p95", pick(pts, "gap_hi", true), colors.gap, "-1"),
        lineSet("gap", pick(pts, "gap", true), colors.gap),
        unstableSet("unstable", pick(pts, "gap", false), colors.unstable),
      ] },
      options: chartOptions(s, "gap", colors, s.mode === "aa" ? "A / A′" : "× CUDA"),
      plugins: [parityLine, changeMarks],
    });
    var wfLine = ringSet(sideName(s, "wf"), pick(pts, "wf", true), colors.wf); wfLine.side = "wf";
    var cuLine = lineSet(sideName(s, "cuda"), pick(pts, "cuda", true), colors.cuda); cuLine.side = "cuda";
    var wfUn = unstableSet("unstable", pick(pts, "wf", false), colors.unstable); wfUn.side = "wf";
    var cuUn = unstableSet("unstable", pick(pts, "cuda", false), colors.unstable); cuUn.side = "cuda";
    var time = new Chart(timeCanvas, {
      type: "line",
      data: { labels: labels, datasets: [
        bandSet("wf p5", pick(pts, "wf_lo", true), colors.wf, false),
        bandSet("wf p95", pick(pts, "wf_hi", true), colors.wf, "-1"),
        wfLine,
        bandSet("cuda p5", pick(pts, "cuda_lo", true), colors.cuda, false),
        bandSet("cuda p95", pick(pts, "cuda_hi", true), colors.cuda, "-1"),
        cuLine, wfUn, cuUn,
      ] },
      options: chartOptions(s, "time", colors, "µs per launch"),
    });
    charts.push(gap, time);
  }

  function key(kind, color, text) {
    var sw = el("span", { class: kind });
    if (kind === "swatch" || kind === "band") sw.style.background = color;
    if (kind === "ring" || kind === "dot") sw.style.borderColor = sw.style.background = color;
    if (kind === "ring") sw.style.background = "transparent";
    return el("span", { class: "key" }, [sw, text]);
  }

  function pointsTable(s) {
    var rows = s.points.slice().reverse().map(function (p) {
      var commit = p.commit ? link(p.commit_url, p.commit.slice(0, 10)) : document.createTextNode("–");
      var run = p.run_url ? link(p.run_url, "run") : document.createTextNode("–");
      return el("tr", { class: isStable(p) ? "ok" : "unstable", dataset: { standing: standingOf(p) } }, [
        el("td", { text: p.date }), el("td", { class: "mono" }, [commit]), el("td", null, [run]),
        el("td", { class: "mono", text: p.warpforthc }),
        el("td", { class: "num", text: fmtGap(p.gap) }), el("td", { class: "num", text: fmtUs(p.wf) }),
        el("td", { class: "num", text: fmtUs(p.cuda) }), el("td", { class: "num", text: (p.noise * 100).toFixed(2) + "%" }),
        el("td", null, [statusBadge(p)]),
      ]);
    });
    var wfHead = s.mode === "aa" ? "A µs" : "WF µs", cuHead = s.mode === "aa" ? "A′ µs" : "CUDA µs";
    return el("div", { class: "table-scroll" }, [el("table", { class: "points" }, [
      el("thead", null, [el("tr", null, ["date (UTC)", "commit", "CI", "warpforthc", "gap", wfHead, cuHead, "noise", "status"]
        .map(function (h, i) { return el("th", { class: i >= 4 && i <= 7 ? "num" : null, text: h }); }))]),
      el("tbody", null, rows),
    ])]);
  }

  // counted in trends: what the history says (status ok, not throttled out, healthy host, not launch-bound)
  function isStable(p) { return p.stable === undefined ? p.status === "ok" : p.stable; }
  // "3 throttled", "1 unstable, 2 throttled": the points left out of trends, by the word each one's badge shows
  function leftOut(points) {
    var counts = {};
    points.forEach(function (p) { if (!isStable(p)) counts[standingOf(p)] = (counts[standingOf(p)] || 0) + 1; });
    return Object.keys(counts).sort().map(function (k) { return counts[k] + " " + k; }).join(", ");
  }

  function renderSeries(s) {
    var colors = palette();
    var last = s.points[s.points.length - 1];
    var n = s.points.length;
    var stable = s.points.filter(isStable);
    var unstable = n - stable.length;
    var title = el("h3", null, [s.case + " ", el("span", { class: "ver", text: "v" + s.version }), " ",
      badge("priority", s.priority), " ", kindBadge(s),
      s.superseded_by ? badge("superseded", "superseded by v" + s.superseded_by)
        : s.current ? null : badge("not-latest", "not in latest run")]);
    var latest = el("div", { class: "latest" }, [el("b", { class: s.mode === "aa" ? null : gapClass(last.gap), text: fmtGap(last.gap) }),
      "latest · " + plural(n, "point") + (unstable ? " · " + unstable + " left out of trends (" + leftOut(s.points) + ")" : "")]);
    var gapCaption = el("figcaption", null, [el("strong", { text: s.mode === "aa" ? "A / A′ ratio" : "Gap" }),
      key("swatch", colors.gap, "median"), key("band", colors.gap, "p5–p95 of pairs"), key("tri", null, "unstable")]);
    var timeCaption = el("figcaption", null, [el("strong", { text: "Kernel time" }),
      key("ring", colors.wf, sideName(s, "wf")), key("dot", colors.cuda, sideName(s, "cuda")),
      key("band", colors.faint, "p5–p95"), key("tri", null, "unstable")]);
    var sig = el("dl", { class: "sig" }, [].concat.apply([], s.signature.map(function (kv) {
      return [el("dt", { text: kv[0] }), el("dd", { class: kv[0] === "series" || kv[0] === "CUDA compiler" ? "mono" : null, text: kv[1] })];
    })));
    var section = el("section", { class: "series card " + s.kind, id: "s-" + s.id,
      dataset: { series: s.id, kind: s.kind, points: String(n), unstable: String(unstable) } }, [
      el("header", null, [title, latest]),
      el("div", { class: "charts" }, [
        el("figure", null, [gapCaption, el("div", { class: "chart-box" }, [el("canvas", { class: "chart-gap", role: "img",
          "aria-label": s.case + " gap over time" })]), stepsLine(s)]),
        el("figure", null, [timeCaption, el("div", { class: "chart-box" }, [el("canvas", { class: "chart-time", role: "img",
          "aria-label": s.case + " kernel times over time" })])]),
      ]),
      el("details", null, [el("summary", { text: "signature and " + (n === 1 ? "the only point" : "all " + plural(n, "point")) }),
        sig, pointsTable(s)]),
    ]);
    return section;
  }

  // A series with one point has no trend to draw yet: it is one row of its group's table, not two charts.
  function singleRow(s) {
    var p = s.points[0];
    var commit = p.commit ? link(p.commit_url, p.commit.slice(0, 10)) : document.createTextNode("–");
    var sig = el("dl", { class: "sig" }, [].concat.apply([], s.signature.map(function (kv) {
      return [el("dt", { text: kv[0] }), el("dd", { class: kv[0] === "series" || kv[0] === "CUDA compiler" ? "mono" : null, text: kv[1] })];
    })));
    var name = el("td", { class: "case" }, [caseName(s) + " ", badge("priority", s.priority), " ", kindBadge(s),
      s.superseded_by ? badge("superseded", "superseded by v" + s.superseded_by)
        : s.current ? null : badge("not-latest", "not in latest run")]);
    var gapCell = el("td", { class: "num" + (s.mode === "aa" ? "" : " " + gapClass(p.gap)), text: fmtGap(p.gap) });
    return el("tr", { class: "series-row " + (isStable(p) ? "ok" : "unstable"), id: "s-" + s.id,
      dataset: { series: s.id, kind: s.kind, points: "1", unstable: isStable(p) ? "0" : "1" } }, [
      name, gapCell, el("td", { class: "num", text: fmtUs(p.wf) }), el("td", { class: "num", text: fmtUs(p.cuda) }),
      el("td", { class: "num", text: (p.noise * 100).toFixed(2) + "%" }), el("td", null, [statusBadge(p)]),
      el("td", { text: p.date }), el("td", { class: "mono" }, [commit]), el("td", { class: "mono", text: p.warpforthc }),
      el("td", null, [el("details", null, [el("summary", { text: "signature" }), sig])]),
    ]);
  }

  function singlesTable(kind, series) {
    var aa = kind === "aa";
    var head = ["case", aa ? "A / A′" : "gap", aa ? "A µs" : "WF µs", aa ? "A′ µs" : "CUDA µs", "noise", "status",
      "date (UTC)", "commit", "warpforthc", ""];
    return el("section", { class: "card singles", dataset: { kind: kind } }, [
      el("p", { class: "explain", text: plural(series.length, "series", "series") + " with one point so far: a row " +
        "each here; a series gets its charts with its second point." }),
      el("div", { class: "table-scroll" }, [el("table", { class: "points singles" }, [
        el("thead", null, [el("tr", null, head.map(function (h, i) {
          return el("th", { class: i >= 1 && i <= 4 ? "num" : null, text: h }); }))]),
        el("tbody", null, series.map(singleRow)),
      ])]),
    ]);
  }

  var GROUP_TITLES = {
    canonical: "Canonical series",
    basehead: "Base/head runs: two warpforthc builds in one run",
    aa: "A/A floor: CUDA against itself",
  };


  // ---------------------------------------------------------------------------------------------- sweeps

  // the newest size sweep of each case (wfbench sweep): gap against size, never part of a series or the headline
  function renderSweeps() {
    var box = document.getElementById("sweeps");
    if (!DATA.sweeps || !DATA.sweeps.length) return;
    box.hidden = false;
    box.appendChild(el("h2", { class: "group", text: "Size sweeps: gap against size (their own series; not in the " +
      "headline or the trends)" }));
    DATA.sweeps.forEach(function (w) {
      var canvas = el("canvas", { class: "chart-sweep", role: "img",
        "aria-label": "gap of " + w.case + " against " + w.axis });
      var card = el("article", { class: "card sweep", id: "sweep-" + w.case, dataset: { sweep: w.case } }, [
        el("h3", null, [w.case + " ", el("span", { class: "ver", text: "v" + w.version }), " ",
          badge("sweep", "size sweep", "label")]),
        el("p", { class: "muted", text: w.gpu + " (" + w.cc + ") · warpforthc " + w.warpforthc +
          (w.commit ? " · " + w.commit.slice(0, 10) : "") + " · " + w.created }),
        el("figure", null, [el("figcaption", { text: "Gap against " + w.axis + ". A square was timed in graph mode: " +
            "in events mode a side was launch-bound there (per-launch time within 2× of an empty kernel's)." }),
          el("div", { class: "chart-box" }, [canvas])]),
        sweepTable(w),
      ]);
      box.appendChild(card);
      drawSweep(canvas, w);
    });
  }

  function sweepTable(w) {
    var rows = w.points.map(function (p) {
      var bound = [p.lb_wf ? "WF" : "", p.lb_cuda ? "CUDA" : ""].filter(Boolean).join("+") || "–";
      return el("tr", { class: p.status, dataset: { mode: p.mode } }, [
        el("td", { class: "num", text: String(p.x) }),
        el("td", { class: "num", text: p.wf === null ? "–" : fmtUs(p.wf) }),
        el("td", { class: "num", text: p.cuda === null ? "–" : fmtUs(p.cuda) }),
        el("td", { class: "num", text: fmtGap(p.gap) }),
        el("td", { text: p.mode || "–" }), el("td", { text: bound }),
        el("td", { class: "num", text: p.events_gap === null ? "–" : fmtGap(p.events_gap) }),
      ]);
    });
    return el("div", { class: "table-scroll" }, [el("table", { class: "points sweep-points" }, [
      el("thead", null, [el("tr", null, [w.axis, "WF µs", "CUDA µs", "gap", "mode", "launch-bound (events)",
        "events-mode gap"].map(function (h, i) {
          return el("th", { class: i <= 3 || i === 6 ? "num" : null, text: h });
        }))]),
      el("tbody", null, rows),
    ])]);
  }

  function drawSweep(canvas, w) {
    var colors = palette();
    var pts = w.points.filter(function (p) { return p.gap !== null; });
    var data = pts.map(function (p) { return { x: p.x, y: p.gap }; });
    var chart = new Chart(canvas, {
      type: "line",
      data: { datasets: [{ label: "gap", data: data, borderColor: colors.gap, backgroundColor: colors.gap,
        borderWidth: 2, tension: 0, pointRadius: 5,
        pointStyle: pts.map(function (p) { return p.mode === "graph" ? "rect" : "circle"; }) }] },
      options: {
        animation: false, responsive: true, maintainAspectRatio: false,
        plugins: { legend: { display: false }, parityLine: { enabled: true, color: colors.faint },
          tooltip: { callbacks: { label: function (ctx) {
            var p = pts[ctx.dataIndex];
            return w.axis + "=" + p.x + ": gap " + fmtGap(p.gap) + " (" + p.mode + "), WF " + fmtUs(p.wf) +
              " µs, CUDA " + fmtUs(p.cuda) + " µs";
          } } } },
        scales: {
          x: { type: "logarithmic", title: { display: true, text: w.axis, color: colors.muted },
            grid: { display: false }, border: { color: colors.line },
            // a tick at each size of the sweep, a power of two written as one
            afterBuildTicks: function (axis) { axis.ticks = pts.map(function (p) { return { value: p.x }; }); },
            ticks: { color: colors.muted, maxRotation: 0, callback: function (v) {
              var k = Math.log2(v);
              return Number.isInteger(k) ? "2^" + k : String(v);
            } } },
          y: { grace: "8%", grid: { color: colors.grid }, border: { display: false },
            title: { display: true, text: "× CUDA", color: colors.muted, font: { size: 11 } },
            ticks: { color: colors.muted } },
        },
      },
      plugins: [parityLine],
    });
    charts.push(chart);
  }

  // ---------------------------------------------------------------------------------------------- page

  function render() {
    renderProblems();
    renderSweeps();
    var headline = document.getElementById("headline");
    var list = document.getElementById("series");
    var toc = document.getElementById("toc");
    document.getElementById("generated").textContent = "Generated " + DATA.generated + " by wfbench " +
      DATA.wfbench_version + " from " + plural(DATA.runs, "run") + ".";
    if (!DATA.series.length) {
      headline.appendChild(el("div", { class: "card empty", text: "No runs in this history yet. Add one with " +
        "'wfbench history add RESULT.json', then build this page again." }));
      return;
    }
    var hl = null;
    if (DATA.headline) {
      hl = renderHeadline(DATA.headline);
      headline.appendChild(hl.card);
    } else {
      headline.appendChild(el("div", { class: "card empty", text: "No canonical run (one warpforthc against CUDA) in this " +
        "history yet: nothing to headline. The base/head and A/A runs it has are below." }));
    }
    var more = document.getElementById("more");
    if (DATA.headline && DATA.headline.ceilings && DATA.headline.ceilings.length) {
      more.appendChild(el("h2", { class: "group", text: "Library ceilings (never part of the gap)" }));
      more.appendChild(renderCeilings(DATA.headline.ceilings));
    }
    if (DATA.models) more.appendChild(renderModels(DATA.models));
    if (DATA.other_gpus.length) {
      more.appendChild(el("h2", { class: "group", text: "Other GPUs and toolchains (canonical series, not the headline)" }));
      DATA.other_gpus.forEach(function (p) { more.appendChild(renderOtherGpu(p)); });
    }
    if (DATA.comparisons.length) {
      more.appendChild(el("h2", { class: "group", text: GROUP_TITLES.basehead }));
      DATA.comparisons.forEach(function (c) { more.appendChild(renderComparison(c)); });
    }
    if (DATA.floors.length) {
      more.appendChild(el("h2", { class: "group", text: GROUP_TITLES.aa }));
      DATA.floors.forEach(function (f) { more.appendChild(renderFloor(f)); });
    }

    var byId = {};
    DATA.series.forEach(function (s) { byId[s.id] = s; });
    list.appendChild(el("h2", { class: "group", text: "Every series over time" }));
    DATA.groups.forEach(function (g) {
      var title = GROUP_TITLES[g.kind] + " · " + g.gpu + " (" + g.cc + ") · " + g.cuda;
      list.appendChild(el("h2", { class: "group sub", text: title }));
      var chips = el("div", { class: "toc-group" }, [el("span", { class: "toc-title", text: GROUP_TITLES[g.kind] + " · " + g.gpu })]);
      var singles = g.series.map(function (id) { return byId[id]; }).filter(function (s) { return s.points.length === 1; });
      g.series.forEach(function (id) {
        var s = byId[id];
        if (s.points.length > 1) {
          var section = renderSeries(s);
          list.appendChild(section);
          drawCharts(section, s);
        }
        var last = s.points[s.points.length - 1];
        chips.appendChild(el("a", { href: "#s-" + s.id }, [caseName(s) + (s.label ? " · " + s.label : ""),
          el("span", { class: "g " + (s.mode === "aa" ? "" : gapClass(last.gap)), text: fmtGap(last.gap) })]));
      });
      if (singles.length) list.appendChild(singlesTable(g.kind, singles));
      toc.appendChild(chips);
    });
    if (hl) drawHeadlineTrend(hl.card, hl.trend);
    renderLegend();
  }

  render();

  // follow the system's light/dark switch
  if (window.matchMedia) {
    var mq = window.matchMedia("(prefers-color-scheme: dark)");
    var onChange = function () {
      var c = palette();
      charts.forEach(function (ch) {
        var o = ch.options;
        o.scales.x.ticks.color = o.scales.y.ticks.color = c.muted;
        if (o.scales.y.title) o.scales.y.title.color = c.muted;
        o.scales.y.grid.color = c.grid;
        o.plugins.parityLine.color = c.faint;
        if (o.plugins.changeMarks) o.plugins.changeMarks.color = c.text;
        ch.data.datasets.forEach(function (ds) {
          var base = ds.unstable ? c.unstable : ds.side === "cuda" || /^_cuda/.test(ds.label) ? c.cuda
            : ds.side === "wf" || /^_wf/.test(ds.label) ? c.wf : c.gap;
          if (ds.label.charAt(0) === "_") ds.backgroundColor = alpha(base, 0.16);
          else if (ds.unstable) { ds.borderColor = base; ds.backgroundColor = alpha(base, 0.35); }
          else if (ds.ring) { ds.borderColor = ds.backgroundColor = base; }
          else { ds.borderColor = ds.backgroundColor = ds.pointBackgroundColor = base; }
        });
        ch.update();
      });
    };
    if (mq.addEventListener) mq.addEventListener("change", onChange);
  }

  window.wfbenchDashboard = { data: DATA, charts: charts };
})();
