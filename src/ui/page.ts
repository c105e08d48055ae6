/**
 * The dashboard's one page: markup, style and script in one string, built into the package (no
 * CDN). It renders the state /api/state answers and /api/stream pushes; `#agent=ID` shows one
 * agent's page (its family's locks and its events). Text is set with textContent, never as HTML.
 */
export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>agent-lock</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 0; background: #f6f7f9; color: #1d2430; }
  header { background: #1d2430; color: #fff; padding: 10px 18px; display: flex; gap: 18px; align-items: baseline; }
  header h1 { font-size: 17px; margin: 0; }
  header .where { opacity: .75; font-family: ui-monospace, monospace; font-size: 12px; }
  header .live { margin-left: auto; font-size: 12px; }
  main { display: grid; grid-template-columns: minmax(0, 3fr) minmax(0, 2fr); gap: 16px; padding: 16px; }
  section { background: #fff; border-radius: 8px; padding: 12px 16px; box-shadow: 0 1px 2px #0002; }
  h2 { font-size: 15px; margin: 0 0 8px; }
  h3 { font-size: 13px; margin: 12px 0 4px; color: #4a5568; }
  .family { margin: 6px 0 6px 8px; }
  .family > a { font-weight: 600; }
  .lock { display: flex; flex-wrap: wrap; gap: 10px; align-items: baseline; padding: 4px 0 4px 14px; border-top: 1px solid #eef0f3; }
  .scope { font-family: ui-monospace, monospace; font-weight: 600; }
  .muted { color: #6b7280; }
  .tag { border-radius: 4px; padding: 0 6px; font-size: 12px; }
  .ttl { background: #e6f4ea; } .ttl.soon { background: #fff4d6; } .ttl.now { background: #fde2e1; }
  .orphaned, .stale { background: #fff4d6; }
  button { font: inherit; font-size: 12px; cursor: pointer; }
  ol.waiting li { padding: 2px 0; }
  .event { font-family: ui-monospace, monospace; font-size: 12px; padding: 2px 0; border-top: 1px solid #eef0f3; }
  .event .type { font-weight: 700; }
  .event.bad .type { color: #b42318; } .event.good .type { color: #15803d; }
  a { color: #1f5fbf; text-decoration: none; }
</style>
</head>
<body>
<header><h1>agent-lock</h1><span class="where" id="where"></span><span id="agent"></span><span class="live" id="live">connecting…</span></header>
<main>
  <div>
    <section><h2 id="locks-title">Locks</h2><div id="locks"></div></section>
    <section style="margin-top:16px"><h2>Waiting in line</h2><ol class="waiting" id="waiting"></ol></section>
  </div>
  <section><h2>Timeline</h2><div id="events"></div></section>
</main>
<script>
(() => {
  const secret = new URLSearchParams(location.search).get('secret') || '';
  let state = null;
  const el = (tag, attrs, ...children) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'text') node.textContent = v; else if (k === 'onclick') node.onclick = v; else node.setAttribute(k, v);
    }
    for (const child of children) if (child) node.append(child);
    return node;
  };
  const age = (ms) => {
    const s = Math.max(0, Math.round(ms / 1000));
    if (s < 60) return s + 's';
    const m = Math.floor(s / 60);
    if (m < 60) return m + 'm';
    const h = Math.floor(m / 60);
    return h < 48 ? h + 'h' + (m % 60 ? (m % 60) + 'm' : '') : Math.floor(h / 24) + 'd';
  };
  const agentFilter = () => decodeURIComponent((location.hash.match(/^#agent=(.+)$/) || [])[1] || '');
  const agentLink = (id) => el('a', { href: '#agent=' + encodeURIComponent(id), text: id });
  const ofAgent = (id, x) => !id || x.agent_id === id || x.parent_agent_id === id || x.by === id;
  async function breakLock(lock) {
    const reason = prompt('Break ' + lock.scope + ' held by ' + lock.agent_id + '? Why:');
    if (!reason) return;
    const res = await fetch('/api/break', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-alock-secret': secret },
      body: JSON.stringify({ id: lock.id, reason }),
    });
    if (!res.ok) alert('refused: ' + res.status);
  }
  function lockRow(lock, now) {
    const row = el('div', { class: 'lock', 'data-scope': lock.scope },
      el('span', { class: 'scope', text: lock.scope }));
    if (lock.parent_agent_id) row.append(el('span', { class: 'muted' }, 'by child ', agentLink(lock.agent_id)));
    if (lock.intent) row.append(el('span', { text: '"' + lock.intent + '"' }));
    row.append(el('span', { class: 'muted', text: age(now - Date.parse(lock.created_at)) + ' ago · fence ' + lock.fence }));
    if (lock.mode === 'shared') row.append(el('span', { class: 'tag', text: 'shared' }));
    if (lock.claim) row.append(el('span', { class: 'tag claim', text: 'claim · ' + lock.claim.tool + ' · last edit ' + age(now - Date.parse(lock.claim.last_edit_at)) + ' ago' }));
    if (lock.expires_at) {
      const left = Date.parse(lock.expires_at) - now;
      row.append(el('span', { class: 'tag ttl ' + (left < 10000 ? 'now' : left < 60000 ? 'soon' : ''), text: 'TTL ' + age(left) }));
    }
    if (lock.status === 'orphaned') row.append(el('span', { class: 'tag orphaned', text: 'orphaned' }));
    if (lock.stale) row.append(el('span', { class: 'tag stale', text: 'stale' }));
    if (state.allowBreak && secret) row.append(el('button', { class: 'break', text: 'break…', onclick: () => breakLock(lock) }));
    return row;
  }
  function render() {
    if (!state) return;
    const now = Date.now() - (state.receivedAt - state.now);
    const agent = agentFilter();
    document.getElementById('where').textContent = state.where;
    const agentTag = document.getElementById('agent');
    agentTag.replaceChildren(...(agent ? [document.createTextNode('agent ' + agent + ' · '), el('a', { href: '#', text: 'all agents' })] : []));
    const locks = state.locks.filter((l) => ofAgent(agent, l));
    document.getElementById('locks-title').textContent = 'Locks (' + locks.length + ')';
    const trees = new Map();
    for (const lock of locks) {
      const tree = lock.tree === null ? 'resources' : 'tree ' + lock.tree;
      const family = lock.parent_agent_id || lock.agent_id;
      if (!trees.has(tree)) trees.set(tree, new Map());
      const families = trees.get(tree);
      if (!families.has(family)) families.set(family, []);
      families.get(family).push(lock);
    }
    const box = document.getElementById('locks');
    box.replaceChildren();
    if (locks.length === 0) box.append(el('p', { class: 'muted', text: 'no locks held' }));
    for (const [tree, families] of [...trees].sort()) {
      box.append(el('h3', { text: tree }));
      for (const [family, held] of [...families].sort()) {
        box.append(el('div', { class: 'family' }, agentLink(family), ...held.map((l) => lockRow(l, now))));
      }
    }
    const waiting = document.getElementById('waiting');
    waiting.replaceChildren(...state.waiting.filter((t) => ofAgent(agent, t)).map((t) =>
      el('li', { 'data-scope': t.scope }, agentLink(t.agent_id), ' ', el('span', { class: 'scope', text: t.scope }),
        t.intent ? el('span', { text: ' "' + t.intent + '"' }) : null,
        el('span', { class: 'muted', text: ' waiting ' + age(now - Date.parse(t.created_at)) }))));
    const bad = new Set(['broken', 'expired', 'reaped', 'orphaned', 'timeout', 'trespassed']);
    const good = new Set(['acquired', 'already_mine', 'handed_over', 'renewed', 'resumed']);
    const events = state.events.filter((e) => ofAgent(agent, e)).slice().reverse();
    document.getElementById('events').replaceChildren(...events.map((e) =>
      el('div', { class: 'event ' + (bad.has(e.type) ? 'bad' : good.has(e.type) ? 'good' : '') },
        el('span', { class: 'muted', text: new Date(e.at).toISOString().slice(11, 19) + ' ' }),
        el('span', { class: 'type', text: e.type.replace('_', ' ').toUpperCase() }), ' ',
        el('span', { text: e.scope + ' ' }), agentLink(e.agent_id),
        e.by ? el('span', { text: ' by ' + e.by }) : null,
        e.reason ? el('span', { class: 'muted', text: ': ' + e.reason }) : null,
        e.type === 'trespassed' && e.files ? el('span', { text: ' [' + e.files.join(', ') + ']' }) : null)));
  }
  const take = (next) => { next.receivedAt = Date.now(); state = next; render(); };
  // The stream sends the whole state once, then only changes on top of it: the first answer of
  // /api/state is used only until the stream has spoken, never over a newer state.
  let streamed = false;
  fetch('/api/state').then((r) => r.json()).then((s) => { if (!streamed) take(s); });
  const stream = new EventSource('/api/stream');
  stream.addEventListener('state', (m) => { streamed = true; take(JSON.parse(m.data)); });
  const patch = (list, d) => {
    const gone = new Set(d.del);
    const byId = new Map(list.filter((l) => !gone.has(l.id)).map((l) => [l.id, l]));
    for (const l of d.put) byId.set(l.id, l);
    return [...byId.values()];
  };
  stream.addEventListener('changes', (m) => {
    if (!state || !streamed) return;
    const c = JSON.parse(m.data);
    take({ ...state, now: c.now, locks: patch(state.locks, c.locks), waiting: patch(state.waiting, c.waiting),
      events: state.events.concat(c.events).slice(-c.keep) });
  });
  stream.onopen = () => { document.getElementById('live').textContent = '● live'; };
  stream.onerror = () => { document.getElementById('live').textContent = 'reconnecting…'; };
  window.addEventListener('hashchange', render);
  setInterval(render, 1000);
})();
</script>
</body>
</html>
`;
