// ferret's search page. Plain JavaScript, no framework, no build step.
// Every string that comes from the server (names, paths, file text) goes into
// the page as text nodes, never as HTML.
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);
  const PAGE = 100;
  const NAME_DEBOUNCE_MS = 15;
  const GREP_DEBOUNCE_MS = 250;
  const JOURNAL_KEEP = 500;

  const state = {
    mode: 'name',
    sort: 'name',
    desc: false,
    opts: { case: false, ww: false, regex: false, mpath: false, literal: false, fuzzy: false },
    rows: [],
    // Bumped when the rows are replaced: a late draw of the old ones is dropped.
    generation: 0,
    total: 0,
    selected: -1,
    controller: null,
    seq: 0,
    loading: false,
    // The rows shown are the fuzzy matches of a query no name holds.
    fellBack: false,
    // Keystrokes not yet answered by rendered rows (event times).
    pending: [],
    grepNext: null,
    preview: null,
    features: {},
    journalAction: 'any',
    journalKeys: new Set(),
    unseen: 0,
    source: null,
  };

  // ---- talking to the server -------------------------------------------

  class ApiError extends Error {
    constructor(status, body) {
      const e = (body && body.error) || {};
      super(e.message || `HTTP ${status}`);
      this.status = status;
      this.code = e.code || 'ERROR';
      this.hint = e.hint || '';
    }
  }

  async function api(route, params, signal) {
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries(params || {})) {
      if (v === undefined || v === null || v === false || v === '') continue;
      query.set(k, v === true ? '1' : String(v));
    }
    const response = await fetch(`/ui/api/${route}?${query}`, {
      signal, credentials: 'same-origin', headers: { Accept: 'application/json' },
    });
    let body = null;
    try { body = await response.json(); } catch (_) { body = null; }
    if (response.status === 401) showLogin(false);
    if (!response.ok) throw new ApiError(response.status, body);
    return body;
  }

  // ---- small helpers -----------------------------------------------------

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  // `text` with the [start, end) UTF-16 ranges in `marks` wrapped in <mark>.
  function marked(text, marks) {
    const frag = document.createDocumentFragment();
    let at = 0;
    for (const [s, e] of marks || []) {
      if (s < at) continue;
      if (s > at) frag.append(text.slice(at, s));
      frag.append(el('mark', null, text.slice(s, e)));
      at = e;
    }
    if (at < text.length) frag.append(text.slice(at));
    return frag;
  }

  function human(bytes) {
    if (bytes === null || bytes === undefined) return '';
    if (bytes < 1024) return `${bytes} B`;
    const units = ['KB', 'MB', 'GB', 'TB'];
    let v = bytes / 1024;
    let u = 0;
    while (v >= 1024 && u < units.length - 1) { v /= 1024; u += 1; }
    return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[u]}`;
  }

  function pad(n) { return String(n).padStart(2, '0'); }

  function when(iso, withSeconds) {
    if (!iso) return '';
    const d = new Date(iso);
    if (Number.isNaN(d.getTime())) return '';
    const day = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
    const time = `${pad(d.getHours())}:${pad(d.getMinutes())}${withSeconds ? ':' + pad(d.getSeconds()) : ''}`;
    return `${day} ${time}`;
  }

  function count(n) { return Number(n || 0).toLocaleString('en-US'); }

  let toastTimer = 0;
  function toast(text) {
    const t = $('toast');
    t.textContent = text;
    t.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { t.hidden = true; }, 2200);
  }

  async function copy(text) {
    if (!text) return;
    try {
      await navigator.clipboard.writeText(text);
    } catch (_) {
      // Not a secure context (a LAN name over http): the old way.
      const area = el('textarea');
      area.value = text;
      document.body.append(area);
      area.select();
      document.execCommand('copy');
      area.remove();
    }
    toast(`Copied ${text}`);
  }

  function showError(err) {
    const box = $('error');
    if (!err) { box.hidden = true; box.textContent = ''; return; }
    box.textContent = err.hint ? `${err.message}\n${err.hint}` : err.message;
    box.hidden = false;
  }

  function inField(target) {
    return target && (target.tagName === 'INPUT' || target.tagName === 'TEXTAREA' || target.tagName === 'SELECT');
  }

  // ---- searching ---------------------------------------------------------

  // A keystroke searches at once when nothing is in flight; while an answer
  // is awaited, keystrokes wait until typing pauses (the debounce), then the
  // awaited request is cancelled and a new one sent.
  let timer = 0;
  // An empty answer to a plain query asks for its fuzzy matches once typing
  // pauses this long (a word half typed often matches nothing, and the fuzzy
  // pass over every path is the slow one: 80-110 ms a keystroke at 1M).
  const FALLBACK_PAUSE_MS = 300;
  let fallbackTimer = 0;
  function schedule(typedAt) {
    if (typedAt !== undefined) state.pending.push(typedAt);
    clearTimeout(timer);
    clearTimeout(fallbackTimer);
    const grep = state.mode === 'grep';
    if (!grep && !state.loading) { run(true); return; }
    timer = setTimeout(() => run(true), grep ? GREP_DEBOUNCE_MS : NAME_DEBOUNCE_MS);
  }

  function nameParams(offset, fallback) {
    return {
      q: $('q').value, sort: state.sort, desc: state.desc, offset, limit: PAGE,
      case: state.opts.case, ww: state.opts.ww, regex: state.opts.regex, mpath: state.opts.mpath,
      fuzzy: state.opts.fuzzy, fallback,
    };
  }

  // After an empty answer to a plain query: its fuzzy matches, if typing
  // stays paused.
  function offerFallback(answer, text) {
    const plain = !state.opts.fuzzy && !state.opts.case && !state.opts.ww && !state.opts.regex;
    if (answer.total !== 0 || !plain || !text.trim()) return;
    clearTimeout(fallbackTimer);
    fallbackTimer = setTimeout(() => {
      if ($('q').value === text && state.mode === 'name' && !state.loading) run(true, true);
    }, FALLBACK_PAUSE_MS);
  }

  async function run(reset, fallback) {
    if (state.controller) state.controller.abort();
    const controller = new AbortController();
    state.controller = controller;
    const seq = ++state.seq;
    // The keystrokes this request answers: every one typed so far.
    const upTo = reset && state.pending.length ? state.pending[state.pending.length - 1] : null;
    state.loading = true;
    try {
      if (state.mode === 'grep') {
        await runGrep(reset, controller.signal, seq);
        if (upTo !== null) answered(upTo);
      } else {
        const offset = reset ? 0 : state.rows.length;
        const text = $('q').value;
        // A later page of fuzzy matches is asked as the first was.
        const asked = reset ? !!fallback : state.fellBack;
        const answer = await api('search', nameParams(offset, asked), controller.signal);
        if (seq !== state.seq) return;
        showError(null);
        state.fellBack = !!answer.fuzzy_fallback;
        renderRows(answer, reset);
        if (upTo !== null) measure(answered(upTo), text);
        if (reset && !asked) offerFallback(answer, text);
      }
    } catch (err) {
      if (err.name === 'AbortError' || seq !== state.seq) return;
      if (reset) clearResults();
      showError(err);
      // The answer to these keystrokes is the error message.
      if (upTo !== null) measure(answered(upTo), $('q').value, true);
    } finally {
      if (seq === state.seq) state.loading = false;
    }
  }

  // The keystrokes typed up to `upTo`, taken off the pending list.
  function answered(upTo) {
    const done = state.pending.filter((t) => t <= upTo);
    state.pending = state.pending.filter((t) => t > upTo);
    return done;
  }

  // Keystroke to rendered rows, for the benchmark (bench/ui.py reads it
  // through the Performance API): from each input event to the frame after
  // rows answering it (or a later keystroke) went in; a query that does not
  // parse (yet: `size:>` on its way to `size:>4000`) is answered by its error.
  function measure(typed, text, error) {
    requestAnimationFrame(() => setTimeout(() => {
      const end = performance.now();
      try {
        for (const start of typed) performance.measure('ferret:rows', { start, end, detail: { q: text, error: !!error } });
        if (performance.getEntriesByName('ferret:rows').length > 1000) performance.clearMeasures('ferret:rows');
      } catch (_) { /* an old browser without detail: skip */ }
    }, 0));
  }

  function clearResults() {
    state.generation += 1;
    state.rows = [];
    state.total = 0;
    state.selected = -1;
    $('rows').replaceChildren();
    $('grep-results').replaceChildren();
    $('result-state').textContent = '';
    $('empty').hidden = true;
  }

  function renderRows(answer, reset) {
    const tbody = $('rows');
    if (reset) {
      state.rows = [];
      state.selected = -1;
      state.generation += 1;
      tbody.replaceChildren();
      $('results').scrollTop = 0;
    }
    state.rows.push(...answer.results);
    // A row costs about 0.3 ms to lay out and paint: draw what the pane shows
    // now, the rest of the page right after that frame.
    const now = reset ? Math.ceil($('results').clientHeight / 24) + 5 : Infinity;
    appendRows(Math.min(state.rows.length, tbody.children.length + now));
    drawRest(state.generation);
    state.total = answer.total;
    $('empty').hidden = state.total > 0;
    // No name held every word: the fuzzy matches answered, best fit first.
    const guessed = answer.fuzzy_fallback ? ' (fuzzy: no name holds every word)' : '';
    $('result-state').textContent = `${count(state.total)} ${state.total === 1 ? 'result' : 'results'}${guessed} · ${answer.ms} ms`;
    if (reset && state.rows.length) select(0, false);
  }

  // The rows not drawn yet, a slice a frame, so that a keystroke in between
  // is not kept waiting; dropped when newer rows replace them.
  function drawRest(generation) {
    if ($('rows').children.length >= state.rows.length) return;
    requestAnimationFrame(() => setTimeout(() => {
      if (generation !== state.generation) return;
      appendRows(Math.min(state.rows.length, $('rows').children.length + 20));
      drawRest(generation);
    }, 0));
  }

  // Draw the rows of state.rows not yet in the table, up to `to`.
  function appendRows(to) {
    const tbody = $('rows');
    const frag = document.createDocumentFragment();
    for (let i = tbody.children.length; i < to; i += 1) frag.append(rowElement(state.rows[i], i));
    tbody.append(frag);
  }

  function rowElement(r, i) {
    const tr = el('tr', r.kind === 'dir' ? 'dir' : r.kind);
    tr.dataset.i = i;
    tr.setAttribute('aria-selected', 'false');
    const name = el('td', 'c-name');
    name.title = r.path;
    name.append(el('span', 'kind', r.kind === 'dir' ? '\u25B8' : r.kind === 'symlink' ? '\u21AA' : ''));
    const n = el('span', 'name');
    n.append(marked(r.name, r.nm));
    name.append(n, el('span', 'dir-under', r.dir || '.'));
    const dir = el('td', 'c-path', r.dir || '.');
    dir.title = r.dir || '.';
    const size = el('td', 'c-size', human(r.size));
    if (r.size !== null && r.size !== undefined) size.title = `${count(r.size)} bytes`;
    const date = el('td', 'c-date', when(r.modified));
    if (r.modified) date.title = r.modified;
    const act = el('td', 'c-act');
    const b = el('button', 'copy', 'Copy');
    b.type = 'button';
    b.title = 'Copy the full path';
    b.addEventListener('click', (ev) => { ev.stopPropagation(); copy(r.abs || r.path); });
    act.append(b);
    tr.append(name, dir, size, date, act);
    tr.addEventListener('click', () => select(i, false));
    tr.addEventListener('dblclick', () => { select(i, false); openPreview(state.rows[i]); });
    return tr;
  }

  function select(i, scroll) {
    const items = selectable();
    if (!items.length) return;
    i = Math.max(0, Math.min(items.length - 1, i));
    if (state.selected >= 0 && items[state.selected]) items[state.selected].setAttribute('aria-selected', 'false');
    state.selected = i;
    items[i].setAttribute('aria-selected', 'true');
    if (scroll) items[i].scrollIntoView({ block: 'nearest' });
    // Near the end of what is loaded: load the next page.
    if (state.mode === 'name' && i >= state.rows.length - 5) loadMore();
  }

  function selectable() {
    return state.mode === 'grep'
      ? $('grep-results').querySelectorAll('.gline:not(.ctx)')
      : $('rows').children;
  }

  function loadMore() {
    // Not before the rows already fetched are all drawn (the first rows of a
    // new answer leave the end of the table in view for a frame).
    if (state.loading || $('rows').children.length < state.rows.length) return;
    if (state.mode === 'name' && state.rows.length < state.total) run(false);
    if (state.mode === 'grep' && state.grepNext !== null) run(false);
  }

  function selectedItem() {
    const items = selectable();
    return items[state.selected] || null;
  }

  function openSelected() {
    const item = selectedItem();
    if (!item) return;
    if (state.mode === 'grep') {
      openPreview({ path: item.dataset.path, abs: item.dataset.abs, name: item.dataset.path }, Number(item.dataset.line));
    } else {
      openPreview(state.rows[Number(item.dataset.i)]);
    }
  }

  // ---- grep ----------------------------------------------------------------

  async function runGrep(reset, signal, seq) {
    const pattern = $('pattern').value;
    if (!pattern) {
      clearResults();
      state.grepNext = null;
      $('result-state').textContent = 'type the text to find inside the files';
      return;
    }
    const offset = reset ? 0 : state.grepNext || 0;
    $('result-state').textContent = 'searching inside files…';
    const answer = await api('grep', {
      pattern, filter: $('q').value, literal: state.opts.literal, case: state.opts.case,
      ww: state.opts.ww, context: 2, offset, limit: PAGE,
    }, signal);
    if (seq !== state.seq) return;
    showError(null);
    const box = $('grep-results');
    if (reset) { box.replaceChildren(); state.selected = -1; $('results').scrollTop = 0; }
    for (const f of answer.files) box.append(grepFile(f));
    state.grepNext = answer.truncated ? answer.next_offset : null;
    state.total = answer.total;
    $('empty').hidden = answer.total > 0;
    const s = answer.skipped;
    const skipped = [['binary', s.binary], ['too large', s.too_large], ['sensitive', s.sensitive], ['unreadable', s.unreadable],
      ['documents (name them in the filter, e.g. ext:pdf, to search their text)', s.documents]]
      .filter(([, n]) => n > 0).map(([w, n]) => `${n} ${w}`).join(', ');
    let line = `${count(answer.total)} matches in ${count(answer.files_matched)} files · ${count(answer.files_scanned)} scanned · ${answer.ms} ms`;
    if (skipped) line += ` · skipped ${skipped}`;
    if (answer.stopped) line += ` · stopped (${answer.stopped})`;
    $('result-state').textContent = line;
    if (reset && selectable().length) select(0, false);
  }

  function grepFile(f) {
    const section = el('section', 'gfile');
    const head = el('div', 'gfile-head');
    const name = el('span', null, f.path);
    name.title = f.path;
    const b = el('button', null, 'Copy');
    b.type = 'button';
    b.addEventListener('click', () => copy(f.abs || f.path));
    head.append(name, b);
    section.append(head);
    for (const l of f.lines) {
      const row = el('div', l.c ? 'gline ctx' : 'gline');
      row.dataset.path = f.path;
      row.dataset.abs = f.abs || f.path;
      row.dataset.line = l.n;
      row.append(el('span', 'ln', l.n));
      // A document's line: its page (slide, sheet and row, chapter) first.
      if (l.part) row.append(el('span', 'part', l.part));
      const tx = el('span', 'tx');
      tx.append(marked(l.t, l.m));
      row.append(tx);
      row.addEventListener('click', () => {
        const items = Array.from(selectable());
        const i = items.indexOf(row);
        if (i >= 0) select(i, false);
        openPreview({ path: f.path, abs: f.abs, name: f.path }, l.n);
      });
      section.append(row);
    }
    return section;
  }

  // ---- the preview ---------------------------------------------------------

  let previewController = null;
  async function openPreview(row, line, startLine) {
    if (!row) return;
    if (previewController) previewController.abort();
    previewController = new AbortController();
    const pane = $('preview');
    pane.hidden = false;
    $('preview-name').textContent = row.path;
    $('preview-meta').textContent = 'loading…';
    state.preview = { path: row.path, abs: row.abs, line };
    const params = { path: row.path };
    if (state.mode === 'grep') {
      Object.assign(params, { grep: $('pattern').value, literal: state.opts.literal, case: state.opts.case, ww: state.opts.ww });
    } else {
      Object.assign(params, { q: $('q').value, case: state.opts.case, ww: state.opts.ww, regex: state.opts.regex, mpath: state.opts.mpath });
    }
    const start = startLine || (line && line > 300 ? line - 100 : 1);
    if (start > 1) params.line = start;
    const body = $('preview-body');
    try {
      const p = await api('preview', params, previewController.signal);
      state.preview.abs = p.abs || row.abs;
      renderPreview(p, line, startLine > 1);
    } catch (err) {
      if (err.name === 'AbortError') return;
      $('preview-meta').textContent = '';
      const box = el('div', 'refused');
      box.append(el('strong', null, err.code), ' ', err.message);
      if (err.hint) box.append(el('small', null, err.hint));
      body.replaceChildren(box);
      $('preview-download').hidden = true;
    }
  }

  function renderPreview(p, line, append) {
    const body = $('preview-body');
    const dl = $('preview-download');
    dl.hidden = !p.download;
    if (p.download) dl.href = p.download;
    $('preview-name').textContent = p.path;
    if (p.kind === 'text') {
      const meta = [human(p.size), p.encoding, p.total_lines !== null ? `${count(p.total_lines)} lines` : 'large file'];
      if (p.document) {
        meta.splice(1, 1, p.document.format.toUpperCase());
        if (p.document.part_kind) meta.push(`${count(p.document.parts)} ${p.document.part_kind}s`);
      }
      if (p.matches) meta.push(`${count(p.matches)} matches shown`);
      $('preview-meta').textContent = meta.join(' · ');
      let code = append ? body.querySelector('.code') : null;
      if (!code) { code = el('div', 'code'); body.replaceChildren(code); }
      body.querySelector('.more-lines')?.remove();
      for (const l of p.lines) {
        const row = el('div', 'line');
        row.dataset.n = l.n;
        row.append(el('span', 'ln', l.n));
        const tx = el('span', 'tx');
        tx.append(marked(l.t, l.m));
        row.append(tx);
        code.append(row);
      }
      if (p.next_start_line) {
        const more = el('button', 'more-lines', `Show lines from ${count(p.next_start_line)}`);
        more.type = 'button';
        more.addEventListener('click', () => openPreview(state.preview, null, p.next_start_line));
        body.append(more);
      }
      if (!append) {
        const target = line ? code.querySelector(`.line[data-n="${line}"]`) : code.querySelector('mark');
        if (target) {
          const lineEl = target.closest('.line');
          if (line) lineEl.classList.add('target');
          lineEl.scrollIntoView({ block: 'center' });
        } else {
          body.scrollTop = 0;
        }
      }
    } else if (p.kind === 'image') {
      $('preview-meta').textContent = [p.format, p.width && `${p.width} × ${p.height}`, human(p.size)].filter(Boolean).join(' · ');
      const wrap = el('div', 'preview-image');
      const img = el('img');
      img.alt = p.path;
      img.src = p.src;
      wrap.append(img);
      body.replaceChildren(wrap);
    } else if (p.kind === 'binary') {
      $('preview-meta').textContent = human(p.size);
      body.replaceChildren(el('p', 'preview-note', `Binary file${p.type ? ` (${p.type})` : ''}, ${count(p.size)} bytes: its content is not shown.`));
    } else if (p.kind === 'folder') {
      $('preview-meta').textContent = p.summary;
      const list = el('ul', 'listing');
      for (const e of p.entries) {
        const li = el('li');
        li.append(el('span', 'kind', e.kind === 'dir' ? '\u25B8' : ''), el('span', 'name', e.name));
        li.append(el('span', 'meta', e.kind === 'dir' ? '' : human(e.size)));
        li.addEventListener('click', () => openPreview({ path: e.path, name: e.name }));
        list.append(li);
      }
      body.replaceChildren(list);
      if (p.truncated) body.append(el('p', 'preview-note', `First ${count(p.entries.length)} of ${count(p.total)} entries.`));
    }
  }

  function closePreview() {
    if (previewController) previewController.abort();
    $('preview').hidden = true;
    $('preview-body').replaceChildren();
    state.preview = null;
    $('q').focus();
  }

  // ---- the journal -----------------------------------------------------------

  function connectJournal() {
    if (state.source) state.source.close();
    state.journalKeys.clear();
    $('journal-list').replaceChildren();
    const url = `/ui/api/events?action=${encodeURIComponent(state.journalAction)}`;
    const source = new EventSource(url);
    state.source = source;
    source.addEventListener('open', () => { $('journal-state').textContent = 'live'; });
    source.addEventListener('error', () => { $('journal-state').textContent = 'reconnecting…'; });
    source.addEventListener('status', (ev) => showStatus(JSON.parse(ev.data)));
    source.addEventListener('change', (ev) => addChange(JSON.parse(ev.data)));
  }

  function addChange(c) {
    const key = `${c.at_ms} ${c.action} ${c.path} ${c.old_path || ''}`;
    if (state.journalKeys.has(key)) return;
    state.journalKeys.add(key);
    const li = el('li');
    li.dataset.action = c.action;
    li.append(el('span', 'when', when(c.at, true).slice(11)), el('span', `act ${c.action}`, c.action));
    li.append(el('span', 'path', c.path));
    if (c.by === 'ferret') li.append(el('span', 'by', 'by ferret'));
    if (c.old_path) li.append(el('span', 'old', `from ${c.old_path}`));
    li.title = when(c.at, true);
    if (c.action !== 'deleted') li.addEventListener('click', () => openPreview({ path: c.path, name: c.path }));
    const list = $('journal-list');
    list.prepend(li);
    while (list.children.length > JOURNAL_KEEP) list.lastChild.remove();
    if ($('journal').hidden) {
      state.unseen += 1;
      const badge = $('journal-badge');
      badge.textContent = state.unseen > 99 ? '99+' : String(state.unseen);
      badge.hidden = false;
    }
  }

  function showStatus(s) {
    const parts = [`${count(s.entries)} entries`];
    if (!s.ready) parts.push('building the index…');
    else if (s.reconciling) parts.push('ready (checking against the disk)');
    else parts.push('ready');
    if (s.last_change) parts.push(`last change ${when(s.last_change.at, true)} (${s.last_change.action} ${s.last_change.path})`);
    const box = $('index-state');
    box.textContent = parts.join(' · ');
    box.classList.toggle('building', !s.ready);
  }

  function toggleJournal(open) {
    const pane = $('journal');
    pane.hidden = open === undefined ? !pane.hidden : !open;
    $('show-journal').setAttribute('aria-pressed', String(!pane.hidden));
    if (!pane.hidden) {
      state.unseen = 0;
      $('journal-badge').hidden = true;
    }
  }

  // ---- switches, sorting, theme, help, sign-in -------------------------------

  function setMode(mode) {
    state.mode = mode;
    const grep = mode === 'grep';
    $('mode-grep').setAttribute('aria-pressed', String(grep));
    $('pattern').hidden = !grep;
    $('opt-literal').hidden = !grep;
    $('opt-regex').hidden = grep;
    $('opt-mpath').hidden = grep;
    $('opt-fuzzy').hidden = grep || !state.features.fuzzy;
    $('table').hidden = grep;
    $('grep-results').hidden = !grep;
    $('q').placeholder = grep ? 'Which files (Everything syntax; empty: all)' : 'Search names (Everything syntax)  /';
    clearResults();
    (grep ? $('pattern') : $('q')).focus();
    schedule(performance.now());
  }

  // Fuzzy letters match in either case and inside words: in a name search,
  // Fuzzy and Match case or Whole words each turn the other off (the API
  // refuses them together rather than ignore one).
  const EXCLUDES = { fuzzy: ['case', 'ww'], case: ['fuzzy'], ww: ['fuzzy'] };

  function bindToggle(id, key) {
    const b = $(id);
    b.addEventListener('click', () => {
      state.opts[key] = !state.opts[key];
      b.setAttribute('aria-pressed', String(state.opts[key]));
      if (state.opts[key] && state.mode !== 'grep') {
        for (const other of EXCLUDES[key] || []) {
          state.opts[other] = false;
          $(`opt-${other}`).setAttribute('aria-pressed', 'false');
        }
      }
      schedule(performance.now());
    });
  }

  function setSort(key) {
    if (state.sort === key) {
      state.desc = !state.desc;
    } else {
      state.sort = key;
      // Biggest and newest first are what one looks for; names A to Z.
      state.desc = key === 'size' || key === 'modified';
    }
    for (const th of document.querySelectorAll('#table th[data-sort]')) {
      if (th.dataset.sort === state.sort) th.setAttribute('aria-sort', state.desc ? 'descending' : 'ascending');
      else th.removeAttribute('aria-sort');
    }
    run(true);
  }

  const THEMES = ['auto', 'light', 'dark'];
  function applyTheme(theme) {
    if (theme === 'auto') delete document.documentElement.dataset.theme;
    else document.documentElement.dataset.theme = theme;
    $('theme').title = `Theme: ${theme} (click to change)`;
  }
  function storedTheme() {
    try { return localStorage.getItem('ferret-theme') || 'auto'; } catch (_) { return 'auto'; }
  }

  function showLogin(wrong) {
    const d = $('login');
    if (wrong) $('login-wrong').hidden = false;
    if (!d.open) d.showModal();
  }

  // ---- keys ----------------------------------------------------------------

  document.addEventListener('keydown', (ev) => {
    if ($('help').open || $('login').open || $('settings').open) return;
    const typing = inField(ev.target);
    if (ev.key === '/' && !typing) { ev.preventDefault(); $('q').focus(); $('q').select(); return; }
    if (ev.key === '?' && !typing) { ev.preventDefault(); $('help').showModal(); return; }
    if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
      if (ev.target.tagName === 'SELECT') return;
      ev.preventDefault();
      select(state.selected + (ev.key === 'ArrowDown' ? 1 : -1), true);
      return;
    }
    if (ev.key === 'Enter' && ev.target.tagName !== 'BUTTON' && ev.target.tagName !== 'A' && ev.target.tagName !== 'SELECT') {
      ev.preventDefault();
      openSelected();
      return;
    }
    if (ev.key === 'Escape') {
      if (!$('preview').hidden) { ev.preventDefault(); closePreview(); return; }
      if (!$('journal').hidden) { ev.preventDefault(); toggleJournal(false); return; }
    }
    if (ev.altKey && (ev.key === 'c' || ev.key === 'C')) {
      const item = selectedItem();
      if (!item) return;
      ev.preventDefault();
      if (state.mode === 'grep') copy(item.dataset.abs);
      else { const r = state.rows[Number(item.dataset.i)]; copy(r.abs || r.path); }
    }
  });

  // ---- settings (read-only) ------------------------------------------------

  async function showSettings() {
    const rows = $('settings-rows');
    rows.replaceChildren();
    $('settings-file').textContent = 'loading…';
    $('settings-reload').textContent = '';
    $('settings').showModal();
    let s;
    try { s = await api('settings'); } catch (err) { $('settings-file').textContent = err.message; return; }
    if (!s) { $('settings-file').textContent = 'This ferret does not show its settings.'; return; }
    $('settings-file').textContent = !s.file ? 'No configuration file.'
      : s.file_exists ? `Configuration file: ${s.file}`
        : `No configuration file: ${s.file} does not exist (ferret reads it once it does).`;
    const r = s.last_reload;
    if (r) {
      const what = r.applied ? 'applied' : `not applied (the running settings were kept): ${r.error || ''}`;
      const later = (r.restart_needed || []).length ? `; takes a restart: ${r.restart_needed.join(', ')}` : '';
      $('settings-reload').textContent = `Read again ${when(r.at, true)} (${r.cause}): ${what}${later}`;
    }
    for (const e of s.effective || []) {
      const tr = el('tr');
      tr.append(el('td', null, e.key), el('td', null, e.value === '' ? '(none)' : e.value), el('td', 'muted', e.source));
      rows.append(tr);
    }
  }

  // ---- start ---------------------------------------------------------------

  function start() {
    applyTheme(storedTheme());
    $('theme').addEventListener('click', () => {
      const next = THEMES[(THEMES.indexOf(storedTheme()) + 1) % THEMES.length];
      try { localStorage.setItem('ferret-theme', next); } catch (_) { /* private mode */ }
      applyTheme(next);
    });
    $('search-form').addEventListener('submit', (ev) => ev.preventDefault());
    $('q').addEventListener('input', (ev) => schedule(ev.timeStamp));
    $('pattern').addEventListener('input', (ev) => schedule(ev.timeStamp));
    for (const [id, key] of [['opt-case', 'case'], ['opt-ww', 'ww'], ['opt-regex', 'regex'], ['opt-mpath', 'mpath'], ['opt-literal', 'literal'], ['opt-fuzzy', 'fuzzy']]) {
      bindToggle(id, key);
    }
    $('mode-grep').addEventListener('click', () => setMode(state.mode === 'grep' ? 'name' : 'grep'));
    for (const th of document.querySelectorAll('#table th[data-sort] button')) {
      th.addEventListener('click', () => setSort(th.parentElement.dataset.sort));
    }
    $('preview-close').addEventListener('click', closePreview);
    $('preview-copy').addEventListener('click', () => state.preview && copy(state.preview.abs || state.preview.path));
    $('show-journal').addEventListener('click', () => toggleJournal());
    $('journal-close').addEventListener('click', () => toggleJournal(false));
    $('journal-action').addEventListener('change', (ev) => { state.journalAction = ev.target.value; connectJournal(); });
    $('show-help').addEventListener('click', () => $('help').showModal());
    $('show-settings').addEventListener('click', showSettings);
    new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) loadMore();
    }, { root: $('results'), rootMargin: '400px' }).observe($('more'));

    // Links in Everything's form (`/?search=…`) open with their query.
    const given = new URLSearchParams(location.search);
    const initial = given.get('search') || given.get('s') || given.get('q');
    if (initial) $('q').value = initial;
    if (location.hash === '#wrong-token') {
      history.replaceState(null, '', location.pathname + location.search);
      showLogin(true);
    }
    api('status').then((s) => {
      state.features = s.features || {};
      $('opt-fuzzy').hidden = !state.features.fuzzy;
      document.title = `ferret: ${s.roots.map((r) => r.name).join(', ')}`;
      showStatus(s.index);
      connectJournal();
      run(true);
    }).catch((err) => {
      $('index-state').textContent = err.status === 401 ? 'sign in to search' : 'ferret is not answering';
      if (err.status !== 401) showError(err);
    });
  }

  start();
})();
