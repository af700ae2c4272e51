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

  function fmtGap(g) { return g === null || g === undefined ? "–" : g.toFixed(3) + "×"; }
  function fmtUs(v) { return v >= 100 ? v.toFixed(1) : v >= 10 ? v.toFixed(2) : v.toFixed(3); }
  function fmtPct(v) {
    var text = Math.abs(v * 100).toFixed(1);
    return (text === "0.0" ? "±" : v > 0 ? "+" : "−") + text + "%";
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

  function gapBar(g) {
    // log scale around parity: 1.5x (or 1/1.5) fills half the track
    var frac = Math.min(Math.abs(Math.log(g) / Math.log(1.5)), 1) * 50;
    var span = el("span", { class: g <= 1 ? "good" : "bad" });
    span.style.width = "max(3px, " + frac.toFixed(2) + "%)";
    if (g <= 1) span.style.right = "50%"; else span.style.left = "50%";
    return el("span", { class: "gapbar", "aria-hidden": "true" }, [span]);
  }

  function statusBadge(status) {
    return el("span", { class: "badge " + status, title: status === "unstable"
      ? "MAD/median above the run's threshold: shown, but left out of trends, the headline and alerts" : "stable" },
      [status === "unstable" ? "unstable" : "stable"]);
  }

  // ---------------------------------------------------------------------------------------------- headline

  function renderProblems() {
    if (!DATA.problems.length) return;
    var box = document.getElementById("problems");
    box.hidden = false;
    box.appendChild(el("strong", { text: DATA.problems.length + " file(s) in the history could not be used:" }));
    box.appendChild(el("ul", null, DATA.problems.map(function (p) { return el("li", { text: p }); })));
  }

  function renderPlatform(p) {
    var latest = p.latest;
    var aa = p.mode === "aa";
    var g = latest.geomean;
    var big = g === null
      ? el("div", { class: "gap-value none", text: "no stable P0 case in the latest run" })
      : el("div", { class: "gap-value " + (aa ? "" : gapClass(g)), text: fmtGap(g) });
    var sub = [
      "over " + latest.geomean_cases + " stable P0 case" + (latest.geomean_cases === 1 ? "" : "s"),
      " · run " + latest.date,
    ];
    var subNode = el("div", { class: "hero-sub" }, sub);
    if (latest.commit) {
      subNode.appendChild(document.createTextNode(" · commit "));
      subNode.appendChild(link(latest.commit_url, latest.commit.slice(0, 7)));
    }
    if (latest.run_url) {
      subNode.appendChild(document.createTextNode(" · "));
      subNode.appendChild(link(latest.run_url, "CI run"));
    }
    subNode.appendChild(document.createTextNode(" · warpforthc " + latest.warpforthc));

    var sig = el("dl", { class: "sig" }, [
      el("dt", { text: "GPU" }), el("dd", { text: p.gpu + " (compute " + p.cc + ")" }),
      el("dt", { text: "CUDA side" }), el("dd", { class: "mono", text: p.cuda }),
      el("dt", { text: "timing" }), el("dd", { text: aa ? "A/A: CUDA against itself (the method's floor)" : "paired, interleaved" }),
    ].concat(p.label ? [el("dt", { text: "compiler" }), el("dd", { text: p.label })] : []));

    var head = el("div", { class: "hero-main" }, [
      el("div", { class: "eyebrow", text: aa ? "A/A floor · geometric mean over stable P0 cases" : "Latest geometric-mean gap · stable P0 cases" }),
      big,
      g === null || aa ? null : el("div", { class: "verdict " + gapClass(g), text: gapWords(g) }),
      subNode,
    ]);

    var rows = latest.cases.map(function (c) {
      return el("tr", { class: c.status, dataset: { series: c.series } }, [
        el("td", null, [el("a", { href: "#s-" + c.series, text: c.case }), " ", el("span", { class: "badge", text: "v" + c.version }),
          " ", el("span", { class: "badge", text: c.priority })]),
        el("td", { class: "num" }, [el("span", { class: "gapcell" }, [el("span", { class: "case-gap " + (aa ? "" : gapClass(c.gap)),
          text: fmtGap(c.gap) }), aa ? null : gapBar(c.gap)])]),
        el("td", { class: "num", text: fmtUs(c.wf) }),
        el("td", { class: "num", text: fmtUs(c.cuda) }),
        el("td", { class: "num", text: (c.noise * 100).toFixed(2) + "%" }),
        el("td", { class: "num" + (c.change === null ? "" : c.change > 0.005 ? " bad" : c.change < -0.005 ? " good" : ""),
          text: c.change === null ? "–" : fmtPct(c.change) }),
        el("td", null, [statusBadge(c.status)]),
      ]);
    });
    var table = el("table", { class: "cases" }, [
      el("thead", null, [el("tr", null, [
        el("th", { text: "case" }), el("th", { class: "num", text: "gap" }), el("th", { class: "num", text: "WarpForth µs" }),
        el("th", { class: "num", text: "CUDA µs" }), el("th", { class: "num", text: "noise" }),
        el("th", { class: "num", text: "Δ gap vs previous" }), el("th", { text: "status" }),
      ])]),
      el("tbody", null, rows),
    ]);
    return el("article", { class: "platform card", dataset: { platform: p.id, mode: p.mode } }, [
      el("div", { class: "hero" }, [head, sig]),
      el("div", { class: "table-scroll" }, [table]),
    ]);
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

  function pick(points, field, stable) {
    return points.map(function (p) { return (p.status === "ok") === stable ? p[field] : null; });
  }

  function lineSet(label, data, color) {
    return { label: label, data: data, borderColor: color, backgroundColor: color, borderWidth: 2, pointRadius: 3.5,
      pointHoverRadius: 6, pointBackgroundColor: color, spanGaps: true, tension: 0, order: 1 };
  }
  function bandSet(label, data, color, fill) {
    return { label: "_" + label, data: data, borderWidth: 0, pointRadius: 0, pointHitRadius: 0, spanGaps: true,
      backgroundColor: alpha(color, 0.16), borderColor: "transparent", fill: fill, order: 3 };
  }
  function unstableSet(label, data, color) {
    return { label: label, data: data, showLine: false, pointStyle: "triangle", pointRadius: 7, pointHoverRadius: 9,
      borderColor: color, backgroundColor: alpha(color, 0.35), borderWidth: 2, order: 0, unstable: true };
  }

  function tooltip(points, kind) {
    return {
      callbacks: {
        title: function (items) {
          var p = points[items[0].dataIndex];
          return p.date + (p.commit ? "  ·  " + p.commit.slice(0, 10) : "");
        },
        label: function (item) {
          var ds = item.dataset, p = points[item.dataIndex];
          if (ds.label.charAt(0) === "_") return null;
          if (kind === "gap") {
            return (ds.unstable ? "unstable gap " : "gap ") + fmtGap(p.gap) + "  (p5–p95 of pairs " +
              p.gap_lo.toFixed(3) + "–" + p.gap_hi.toFixed(3) + ")";
          }
          var side = ds.side, v = p[side];
          return (ds.unstable ? "unstable " : "") + (side === "wf" ? "WarpForth " : "CUDA ") + fmtUs(v) + " µs  (p5–p95 " +
            fmtUs(p[side + "_lo"]) + "–" + fmtUs(p[side + "_hi"]) + ", MAD " + fmtUs(p[side + "_mad"]) + ")";
        },
        footer: function (items) {
          var p = points[items[0].dataIndex];
          var lines = ["warpforthc " + p.warpforthc, "noise " + (p.noise * 100).toFixed(2) + "% · " + p.samples + " samples"];
          if (p.status !== "ok") lines.push("unstable: left out of trends and alerts");
          if (p.commit_url || p.run_url) lines.push("click the point to open the " + (p.commit_url ? "commit" : "CI run"));
          return lines;
        },
      },
      footerFont: { weight: "normal" },
      filter: function (item) { return item.dataset.label.charAt(0) !== "_" && item.raw !== null; },
    };
  }

  // never zoom in so far that run-to-run noise of a fraction of a percent looks like a cliff
  var MIN_SPAN = 0.04;

  function yRange(points, fields) {
    var lo = Infinity, hi = -Infinity;
    points.forEach(function (p) {
      fields.forEach(function (f) {
        if (p[f] !== null && p[f] !== undefined) { lo = Math.min(lo, p[f]); hi = Math.max(hi, p[f]); }
      });
    });
    var mid = (lo + hi) / 2;
    if (!isFinite(mid) || (hi - lo) >= MIN_SPAN * mid) return {};
    return { suggestedMin: mid * (1 - MIN_SPAN / 2), suggestedMax: mid * (1 + MIN_SPAN / 2) };
  }

  function chartOptions(points, kind, colors, yTitle) {
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
        tooltip: tooltip(points, kind),
        parityLine: { enabled: kind === "gap", color: colors.faint },
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
      options: chartOptions(pts, "gap", colors, s.mode === "aa" ? "A / A′" : "× CUDA"),
      plugins: [parityLine],
    });
    var wfLine = lineSet(s.mode === "aa" ? "CUDA (A)" : "WarpForth", pick(pts, "wf", true), colors.wf); wfLine.side = "wf";
    var cuLine = lineSet("CUDA", pick(pts, "cuda", true), colors.cuda); cuLine.side = "cuda";
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
      options: chartOptions(pts, "time", colors, "µs per launch"),
    });
    charts.push(gap, time);
  }

  function key(kind, color, text) {
    var sw = kind === "tri" ? el("span", { class: "tri" }) : el("span", { class: kind });
    if (kind !== "tri") sw.style.background = color;
    return el("span", { class: "key" }, [sw, text]);
  }

  function pointsTable(s) {
    var rows = s.points.slice().reverse().map(function (p) {
      var commit = p.commit ? link(p.commit_url, p.commit.slice(0, 10)) : document.createTextNode("–");
      var run = p.run_url ? link(p.run_url, "run") : document.createTextNode("–");
      return el("tr", { class: p.status }, [
        el("td", { text: p.date }), el("td", { class: "mono" }, [commit]), el("td", null, [run]),
        el("td", { class: "mono", text: p.warpforthc }),
        el("td", { class: "num", text: fmtGap(p.gap) }), el("td", { class: "num", text: fmtUs(p.wf) }),
        el("td", { class: "num", text: fmtUs(p.cuda) }), el("td", { class: "num", text: (p.noise * 100).toFixed(2) + "%" }),
        el("td", null, [statusBadge(p.status)]),
      ]);
    });
    return el("div", { class: "table-scroll" }, [el("table", { class: "points" }, [
      el("thead", null, [el("tr", null, ["date", "commit", "CI", "warpforthc", "gap", "WF µs", "CUDA µs", "noise", "status"]
        .map(function (h, i) { return el("th", { class: i >= 4 && i <= 7 ? "num" : null, text: h }); }))]),
      el("tbody", null, rows),
    ])]);
  }

  function renderSeries(s) {
    var colors = palette();
    var last = s.points[s.points.length - 1];
    var stable = s.points.filter(function (p) { return p.status === "ok"; });
    var unstable = s.points.length - stable.length;
    var title = el("h3", null, [s.case + " ", el("span", { class: "ver", text: "v" + s.version }), " ",
      el("span", { class: "badge", text: s.priority }),
      s.mode === "aa" ? el("span", { class: "badge aa", text: "A/A" }) : null,
      s.label ? el("span", { class: "badge", text: s.label }) : null,
      s.current ? null : el("span", { class: "badge", title: "not in its platform's latest run", text: "superseded" })]);
    var latest = el("div", { class: "latest" }, [el("b", { class: s.mode === "aa" ? null : gapClass(last.gap), text: fmtGap(last.gap) }),
      "latest · " + s.points.length + " point" + (s.points.length === 1 ? "" : "s") +
      (unstable ? " · " + unstable + " unstable" : "")]);
    var gapCaption = el("figcaption", null, [el("strong", { text: "Gap" }), key("swatch", colors.gap, "median"),
      key("band", colors.gap, "p5–p95 of pairs"), key("tri", null, "unstable")]);
    var timeCaption = el("figcaption", null, [el("strong", { text: "Kernel time" }),
      key("swatch", colors.wf, s.mode === "aa" ? "CUDA (A)" : "WarpForth"), key("swatch", colors.cuda, "CUDA"),
      key("band", colors.faint, "p5–p95"), key("tri", null, "unstable")]);
    var sig = el("dl", { class: "sig" }, [].concat.apply([], s.signature.map(function (kv) {
      return [el("dt", { text: kv[0] }), el("dd", { class: kv[0] === "series" || kv[0] === "CUDA compiler" ? "mono" : null, text: kv[1] })];
    })));
    var section = el("section", { class: "series card", id: "s-" + s.id,
      dataset: { series: s.id, points: String(s.points.length), unstable: String(unstable) } }, [
      el("header", null, [title, latest]),
      el("div", { class: "charts" }, [
        el("figure", null, [gapCaption, el("div", { class: "chart-box" }, [el("canvas", { class: "chart-gap", role: "img",
          "aria-label": s.case + " gap over time" })])]),
        el("figure", null, [timeCaption, el("div", { class: "chart-box" }, [el("canvas", { class: "chart-time", role: "img",
          "aria-label": s.case + " kernel times over time" })])]),
      ]),
      el("details", null, [el("summary", { text: "signature and all " + s.points.length + " points" }), sig, pointsTable(s)]),
    ]);
    return section;
  }

  // ---------------------------------------------------------------------------------------------- page

  function render() {
    renderProblems();
    var headline = document.getElementById("headline");
    var list = document.getElementById("series");
    var toc = document.getElementById("toc");
    document.getElementById("generated").textContent = "Generated " + DATA.generated + " by wfbench " +
      DATA.wfbench_version + " from " + DATA.runs + " run" + (DATA.runs === 1 ? "" : "s") + ".";
    if (!DATA.platforms.length) {
      headline.appendChild(el("div", { class: "card empty", text: "No runs in this history yet. Add one with " +
        "'wfbench history add RESULT.json', then build this page again." }));
      return;
    }
    DATA.platforms.forEach(function (p) { headline.appendChild(renderPlatform(p)); });
    var byId = {};
    DATA.series.forEach(function (s) { byId[s.id] = s; });
    var multi = DATA.platforms.length > 1;
    DATA.platforms.forEach(function (p) {
      if (multi) {
        list.appendChild(el("h2", { class: "group", text: p.gpu + " (" + p.cc + ") · " + p.cuda +
          (p.mode === "aa" ? " · A/A" : "") + (p.label ? " · " + p.label : "") }));
      }
      p.series.forEach(function (id) {
        var s = byId[id];
        var section = renderSeries(s);
        list.appendChild(section);
        drawCharts(section, s);
        var last = s.points[s.points.length - 1];
        toc.appendChild(el("a", { href: "#s-" + s.id }, [s.case + " v" + s.version + (s.label ? " [" + s.label + "]" : "") + (s.mode === "aa" ? " A/A" : ""),
          el("span", { class: "g " + (s.mode === "aa" ? "" : gapClass(last.gap)), text: fmtGap(last.gap) })]));
      });
    });
  }

  render();

  // follow the system's light/dark switch
  if (window.matchMedia) {
    var mq = window.matchMedia("(prefers-color-scheme: dark)");
    var onChange = function () {
      var c = palette();
      charts.forEach(function (ch) {
        var o = ch.options;
        o.scales.x.ticks.color = o.scales.y.ticks.color = o.scales.y.title.color = c.muted;
        o.scales.y.grid.color = c.grid;
        o.plugins.parityLine.color = c.faint;
        ch.data.datasets.forEach(function (ds) {
          var base = ds.unstable ? c.unstable : ds.side === "cuda" || /^_cuda/.test(ds.label) ? c.cuda
            : ds.side === "wf" || /^_wf/.test(ds.label) ? c.wf : c.gap;
          if (ds.label.charAt(0) === "_") ds.backgroundColor = alpha(base, 0.16);
          else if (ds.unstable) { ds.borderColor = base; ds.backgroundColor = alpha(base, 0.35); }
          else { ds.borderColor = ds.backgroundColor = ds.pointBackgroundColor = base; }
        });
        ch.update();
      });
    };
    if (mq.addEventListener) mq.addEventListener("change", onChange);
  }

  window.wfbenchDashboard = { data: DATA, charts: charts };
})();
