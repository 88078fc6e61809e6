"""The JavaScript that hvd_vs_ddp/reports/browser_check.py runs inside the report's page,
one function per check, each returning the findings as short strings (or a number).

    page.evaluate(browser_js.FIGURES)   # -> ["throughput.png: no alt text", ...]
"""
from __future__ import annotations

# Names an element for a finding: its table's or figure's title, and its section.
_DESC = r"""
const desc = (el) => {
  const sec = el.closest('section');
  let name = el.tagName.toLowerCase();
  const img = el.tagName === 'IMG' ? el : el.querySelector && el.querySelector('img');
  if (img && img.alt) name += ` "${img.alt.slice(0, 60)}"`;
  const t = el.closest('.tw') || el;
  let h = t.previousElementSibling;
  while (h && !/^H[1-4]$/.test(h.tagName)) h = h.previousElementSibling;
  if (!img && h) name += ` "${h.textContent.trim().slice(0, 60)}"`;
  return name + (sec ? ` in #${sec.id}` : '');
};
const openAll = () => document.querySelectorAll('details').forEach(d => { d.open = true; });
// every folded element opened; then the viewport's width and, if the page is wider, that
const opened = () => {
  openAll();
  const w = document.documentElement.clientWidth, sw = document.documentElement.scrollWidth;
  return [w, sw > w + 1 ? [`the page scrolls sideways (${sw} px wide in ${w})`] : []];
};
"""

FIGURES = "async () => {" + _DESC + r"""
  const out = [];
  for (const img of document.querySelectorAll('img')) {
    if (!(img.getAttribute('alt') || '').trim()) out.push(desc(img) + ': no alt text');
    try { await img.decode(); } catch (e) { out.push(desc(img) + ': does not decode'); continue; }
    if (!(img.naturalWidth > 0)) { out.push(desc(img) + ': does not decode'); continue; }
    // a truncated PNG decodes its first rows only: its last row is left transparent
    const c = document.createElement('canvas');
    c.width = img.naturalWidth; c.height = img.naturalHeight;
    const g = c.getContext('2d');
    g.drawImage(img, 0, 0);
    const last = g.getImageData(0, c.height - 1, c.width, 1).data;
    let opaque = 0;
    for (let i = 3; i < last.length; i += 4) opaque += last[i] > 0;
    if (opaque === 0) out.push(desc(img) + ': does not decode to its last row (truncated)');
  }
  return out;
}"""

WIDER = "() => {" + _DESC + r"""
  const [w, out] = opened();
  document.querySelectorAll('table, figure, img, pre, svg').forEach(el => {
    const r = el.getBoundingClientRect();
    if (r.width > w + 1 || r.right > w + 1)
      out.push(`${desc(el)}: ${Math.round(r.width)} px wide, right edge at ${Math.round(r.right)}`);
  });
  return out;
}"""

ANSWER_BOX = r"""() => {
  window.scrollTo(0, 0);
  const box = document.querySelector('.headline');
  return box ? box.getBoundingClientRect().bottom : null;
}"""

LONG_ANSWERS = r"""(most) => [...document.querySelectorAll('.headline li')]
  .map(li => li.textContent.replace(/\s+/g, ' ').trim())
  .filter(t => t.length > most).map(t => `${t.length} characters: "${t.slice(0, 60)}..."`)"""

LINKS = "() => {" + _DESC + r"""
  const out = [];
  document.querySelectorAll('a[href^="#"]').forEach(a => {
    const id = decodeURIComponent(a.getAttribute('href').slice(1));
    const t = document.getElementById(id);
    if (!t) { out.push(`#${id}: no such element`); return; }
    const d = t.closest('details');
    if (d && !d.open && !t.closest('summary') && t !== d) {
      out.push(`#${id}: inside a folded element`); return; }
    t.scrollIntoView();
    const r = t.getBoundingClientRect();
    if (!(t.checkVisibility() && r.top > -2 && r.top < window.innerHeight))
      out.push(`#${id}: the link does not bring it into view`);
  });
  window.scrollTo(0, 0);
  return out;
}"""

LONG_CELLS = "(most) => {" + _DESC + r"""
  const out = [];
  document.querySelectorAll('td, th').forEach(c => {
    let text = '';
    const walk = document.createTreeWalker(c, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      const p = n.parentElement;
      const d = p.closest('details');
      if (d && c.contains(d) && !p.closest('summary')) continue;
      text += n.textContent;
    }
    text = text.replace(/\s+/g, ' ').trim();
    if (text.length > most)
      out.push(`${desc(c.closest('table'))}: ${text.length} characters: "${text.slice(0, 50)}..."`);
  });
  return out;
}"""

PATHS = r"""() => {
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT), parts = [];
  for (let n = walk.nextNode(); n; n = walk.nextNode())
    if (!n.parentElement.closest('script, style')) parts.push(n.textContent);
  const text = parts.join(' ');
  const re = /(?:^|[\s'"(\[=,:;])(\/(?:[\w.+-]+\/)+[\w.+-]*)/g;
  const out = new Set();
  for (const m of text.matchAll(re)) out.add(m[1].slice(0, 80));
  for (const m of text.matchAll(/[\[{]'[^\]}]{0,60}/g)) out.add('a Python value: ' + m[0]);
  return [...out];
}"""

CUT = "() => {" + _DESC + r"""
  const [w, out] = opened();
  const scrolls = (el) => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
  const seen = new Set();
  for (const el of document.querySelectorAll('main *')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.right <= w + 1) continue;
    let a = el.parentElement, held = false, dup = false;
    for (; a && a !== document.body; a = a.parentElement) {
      if (seen.has(a)) { dup = true; break; }
      if (scrolls(a) && a.getBoundingClientRect().right <= w + 1) { held = true; break; }
    }
    if (held || dup) continue;
    seen.add(el);
    out.push(`${desc(el)}: right edge at ${Math.round(r.right)} px`);
  }
  return out;
}"""

AXE = r"""async () => {
  const r = await axe.run(document, {resultTypes: ['violations']});
  return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                                 nodes: v.nodes.length}));
}"""
