// parkgate console charts: small bar and point charts drawn as inline SVG with DOM calls.
// No library and no markup strings: every element is made with createElementNS and every
// value set as an attribute or as text, so the page's Content-Security-Policy
// (script-src 'self'; style-src 'self') holds and no value is ever read as markup.
// A chart is drawn at its container's width in CSS pixels (one SVG unit = one pixel), so
// its text stays readable on a phone's 390 px as on a laptop's 1280 px; the console draws
// it again when the width changes.
"use strict";

(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const FONT = 12;
  let serial = 0;

  function node(name, attributes, text) {
    const element = document.createElementNS(SVG, name);
    for (const [key, value] of Object.entries(attributes || {})) element.setAttribute(key, String(value));
    if (text !== undefined) element.textContent = text;
    return element;
  }

  // A label cut to `room` characters, with an ellipsis: the whole label is the bar's tooltip.
  function cut(label, room) {
    const text = String(label);
    return text.length <= room ? text : text.slice(0, Math.max(1, room - 1)) + "…";
  }

  // A round upper bound for an axis whose largest value is `top`.
  function niceTop(top) {
    if (!(top > 0)) return 1;
    const power = Math.pow(10, Math.floor(Math.log10(top)));
    for (const step of [1, 2, 2.5, 5, 10]) if (step * power >= top) return step * power;
    return 10 * power;
  }

  // The <svg> of a chart: a role="img" with a title and a description listing every value,
  // so a screen reader reads the figures the bars draw.
  function frame(width, height, title, items, format) {
    const id = "chart-" + ++serial;
    const svg = node("svg", {
      width, height, viewBox: "0 0 " + width + " " + height, role: "img", "aria-labelledby": id + "-title " + id + "-desc",
      class: "chart",
    });
    svg.appendChild(node("title", { id: id + "-title" }, title));
    const described = items.map((item) => item.label + ": " + (item.value === null ? "none" : format(item.value)));
    svg.appendChild(node("desc", { id: id + "-desc" }, described.join("; ") || "no data"));
    return svg;
  }

  function empty(svg, width, height) {
    svg.appendChild(node("text", { x: width / 2, y: height / 2, "text-anchor": "middle", class: "chart-empty" }, "No data in this window"));
    return svg;
  }

  // Vertical bars, one per item ({label, value, note}), values on a shared axis from 0.
  function columns(title, items, width, format) {
    const fmt = format || String;
    const height = 200;
    const svg = frame(width, height, title, items, fmt);
    if (!items.length) return empty(svg, width, height);
    const left = 8, right = 8, top = 18, bottom = 34;
    const plot = { w: width - left - right, h: height - top - bottom };
    const max = niceTop(Math.max(...items.map((item) => item.value || 0)));
    svg.appendChild(node("line", { x1: left, x2: width - right, y1: top + plot.h, y2: top + plot.h, class: "axis" }));
    const slot = plot.w / items.length;
    const barWidth = Math.max(4, Math.min(48, slot * 0.7));
    const room = Math.max(2, Math.floor(slot / (FONT * 0.62)));
    items.forEach((item, i) => {
      const value = item.value || 0;
      const h = Math.round((value / max) * plot.h);
      const x = left + slot * i + (slot - barWidth) / 2;
      const bar = node("rect", {
        x: x.toFixed(1), y: top + plot.h - h, width: barWidth.toFixed(1), height: h, class: "bar" + (item.tone ? " " + item.tone : ""),
        "data-key": item.label, "data-value": item.value === null ? "" : item.value,
      });
      bar.appendChild(node("title", {}, item.label + ": " + (item.value === null ? "none" : fmt(item.value)) + (item.note ? " · " + item.note : "")));
      svg.appendChild(bar);
      const shown = item.value === null ? "–" : fmt(item.value);
      if (String(shown).length <= room + 2) {
        svg.appendChild(node("text", { x: (x + barWidth / 2).toFixed(1), y: top + plot.h - h - 4, "text-anchor": "middle", class: "value" }, shown));
      }
      svg.appendChild(node("text", { x: (x + barWidth / 2).toFixed(1), y: height - bottom + 16, "text-anchor": "middle", class: "label" }, cut(item.label, room)));
    });
    return svg;
  }

  // Horizontal bars, one row per item: its label on the left, its value at the bar's end.
  function rows(title, items, width, format) {
    const fmt = format || String;
    const rowHeight = 26;
    const height = Math.max(60, items.length * rowHeight + 16);
    const svg = frame(width, height, title, items, fmt);
    if (!items.length) return empty(svg, width, height);
    const labelWidth = Math.min(170, Math.round(width * 0.3));
    // The bars take under half the rest: their value and note are written after them.
    const plot = Math.round((width - labelWidth) * (width >= 520 ? 0.4 : 0.45));
    const max = niceTop(Math.max(...items.map((item) => item.value || 0)));
    const room = Math.max(3, Math.floor(labelWidth / (FONT * 0.6)));
    items.forEach((item, i) => {
      const y = 8 + i * rowHeight;
      const w = Math.round(((item.value || 0) / max) * plot);
      svg.appendChild(node("text", { x: labelWidth - 6, y: y + 15, "text-anchor": "end", class: "label" }, cut(item.label, room)));
      const bar = node("rect", {
        x: labelWidth, y: y + 3, width: Math.max(item.value ? 2 : 0, w), height: rowHeight - 8, class: "bar" + (item.tone ? " " + item.tone : ""),
        "data-key": item.label, "data-value": item.value === null ? "" : item.value,
      });
      bar.appendChild(node("title", {}, item.label + ": " + (item.value === null ? "none" : fmt(item.value)) + (item.note ? " · " + item.note : "")));
      svg.appendChild(bar);
      const shown = (item.value === null ? "none" : fmt(item.value)) + (item.note && width >= 520 ? " · " + item.note : "");
      const after = labelWidth + Math.max(2, w) + 6;
      svg.appendChild(node("text", { x: after, y: y + 15, class: "value" }, cut(shown, Math.floor((width - after) / (FONT * 0.58)))));
    });
    return svg;
  }

  // Points joined by a line, one per item, on a shared axis from 0 (items without a value
  // leave a gap and draw no point).
  function points(title, items, width, format) {
    const fmt = format || String;
    const height = 200;
    const svg = frame(width, height, title, items, fmt);
    if (!items.some((item) => item.value !== null)) return empty(svg, width, height);
    const left = 8, right = 8, top = 18, bottom = 34;
    const plot = { w: width - left - right, h: height - top - bottom };
    const max = niceTop(Math.max(...items.map((item) => item.value || 0)));
    svg.appendChild(node("line", { x1: left, x2: width - right, y1: top + plot.h, y2: top + plot.h, class: "axis" }));
    const slot = plot.w / items.length;
    const room = Math.max(2, Math.floor(slot / (FONT * 0.62)));
    let path = "";
    let pen = false; // a gap (an item without a value) lifts the pen
    items.forEach((item, i) => {
      const cx = left + slot * i + slot / 2;
      svg.appendChild(node("text", { x: cx.toFixed(1), y: height - bottom + 16, "text-anchor": "middle", class: "label" }, cut(item.label, room)));
      if (item.value === null) {
        pen = false;
        return;
      }
      const cy = top + plot.h - (item.value / max) * plot.h;
      path += (pen ? "L" : "M") + cx.toFixed(1) + "," + cy.toFixed(1) + " ";
      pen = true;
    });
    svg.appendChild(node("path", { d: path.trim(), class: "trend" }));
    items.forEach((item, i) => {
      if (item.value === null) return;
      const cx = left + slot * i + slot / 2;
      const cy = top + plot.h - (item.value / max) * plot.h;
      const point = node("circle", { cx: cx.toFixed(1), cy: cy.toFixed(1), r: 4, class: "point", "data-key": item.label, "data-value": item.value });
      point.appendChild(node("title", {}, item.label + ": " + fmt(item.value) + (item.note ? " · " + item.note : "")));
      svg.appendChild(point);
      if (String(fmt(item.value)).length <= room + 2) {
        svg.appendChild(node("text", { x: cx.toFixed(1), y: (cy - 8).toFixed(1), "text-anchor": "middle", class: "value" }, fmt(item.value)));
      }
    });
    return svg;
  }

  window.parkgateCharts = { columns, rows, points };
})();
