/* order-timeout operator dashboard: plain JavaScript, no dependencies. Reads GET /v1/admin/stats,
   GET /v1/admin/closes, GET /v1/admin/jobs, GET /metrics (Prometheus text) every 2 s, one order with its log on
   request, searches orders (GET /v1/admin/orders) and bulk-closes what a search matches (after a dry run). */
(function () {
  'use strict';
  var KEY_STORE = 'ordertimeout.adminKey';
  var REFRESH_MILLIS = 2000;
  var REASONS = ['TIMEOUT', 'USER_CANCELLED', 'ADMIN'];
  var $ = function (id) { return document.getElementById(id); };
  var previous = null;          // {at, total} of the last stats sample, for the close rate
  var rates = [];               // the last 60 close rates, for the sparkline
  var timer = null;

  function esc(value) {
    return String(value == null ? '' : value).replace(/[&<>"']/g, function (c) {
      return {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'}[c];
    });
  }
  function num(n) { return n == null ? '—' : Number(n).toLocaleString('en-US'); }
  function millis(ms) {
    if (ms == null || isNaN(ms)) return '—';
    ms = Number(ms);
    if (Math.abs(ms) < 1000) return ms.toFixed(0) + ' ms';
    if (Math.abs(ms) < 60000) return (ms / 1000).toFixed(2) + ' s';
    return (ms / 60000).toFixed(1) + ' min';
  }
  function seconds(s) {
    if (s === Infinity) return '+Inf';
    if (s < 1) return Math.round(s * 1000) + 'ms';
    if (s < 60) return s + 's';
    return Math.round(s / 60) + 'm';
  }
  function time(iso) { return iso ? iso.slice(11, 23) : '—'; }
  function set(id, text) { var el = $(id); if (el) el.textContent = text; }

  // ---- the admin key: once from #key=..., else the form; kept in sessionStorage

  function readFragment() {
    var params = new URLSearchParams(location.hash.replace(/^#/, ''));
    var key = params.get('key');
    if (key) {
      sessionStorage.setItem(KEY_STORE, key);
      history.replaceState(null, '', location.pathname + location.search);
    }
    return params.get('order');
  }
  function key() { return sessionStorage.getItem(KEY_STORE); }

  function showLogin(message) {
    if (timer) { clearTimeout(timer); timer = null; }
    $('board').hidden = true;
    $('login').hidden = false;
    set('login-error', message || '');
    setConn('no key', 'pill-wait');
    $('key-input').focus();
  }
  function showBoard() {
    $('login').hidden = true;
    $('board').hidden = false;
  }
  function setConn(text, cls) {
    var el = $('conn');
    el.textContent = text;
    el.className = 'pill ' + cls;
  }

  function Unauthorized(status) { this.status = status; }

  function api(path, body) {
    var options = {headers: {'Authorization': 'Bearer ' + key(), 'Accept': 'application/json'}, cache: 'no-store'};
    if (body !== undefined) {
      options.method = 'POST';
      options.headers['Content-Type'] = 'application/json';
      options.body = JSON.stringify(body);
    }
    return fetch(path, options)
      .then(function (response) {
        if (response.status === 401 || response.status === 403) throw new Unauthorized(response.status);
        return response.json().then(function (body) { return {status: response.status, body: body}; });
      });
  }
  function ok(result) {
    if (result.status !== 200) throw new Error((result.body && result.body.code) || ('HTTP ' + result.status));
    return result.body;
  }

  // ---- the refresh loop

  function refresh() {
    var stats = api('/v1/admin/stats').then(ok);
    var closes = api('/v1/admin/closes?limit=20').then(ok);
    var metrics = fetch('/metrics', {cache: 'no-store'}).then(function (r) {
      if (!r.ok) throw new Error('metrics HTTP ' + r.status);
      return r.text();
    });
    var jobs = api('/v1/admin/jobs?limit=15').then(ok);
    return Promise.allSettled([stats, closes, metrics, jobs]).then(function (results) {
      var denied = results.filter(function (r) { return r.status === 'rejected' && r.reason instanceof Unauthorized; });
      if (denied.length) {
        sessionStorage.removeItem(KEY_STORE);
        showLogin(denied[0].reason.status === 403 ? 'That key is not an admin key.' : 'That key was refused.');
        return false;
      }
      showBoard();
      if (results[0].status === 'fulfilled') renderStats(results[0].value);
      if (results[1].status === 'fulfilled') renderCloses(results[1].value);
      if (results[2].status === 'fulfilled') renderMetrics(results[2].value);
      if (results[3].status === 'fulfilled') renderJobs(results[3].value.jobs);
      var failed = results.filter(function (r) { return r.status === 'rejected'; }).length;
      setConn(failed ? 'partial: ' + failed + ' failed' : 'live', failed ? 'pill-bad' : 'pill-ok');
      set('updated', new Date().toLocaleTimeString('en-GB'));
      return true;
    });
  }
  function loop() {
    refresh().then(function (keepGoing) {
      if (keepGoing) timer = setTimeout(loop, REFRESH_MILLIS);
    }, function () {
      setConn('offline', 'pill-bad');
      timer = setTimeout(loop, REFRESH_MILLIS);
    });
  }

  // ---- stats: close rate, closes by reason, lateness percentiles, pending timers

  function renderStats(stats) {
    var byReason = stats.closesByReason || {};
    var total = 0;
    REASONS.forEach(function (reason) {
      total += byReason[reason] || 0;
      set('closes-' + reason, num(byReason[reason] || 0));
    });
    set('closes-total', num(total));
    var paths = stats.timeoutClosesByPath || {};
    set('path-wheel', num(paths.wheel || 0));
    set('path-sweep', num(paths.sweep || 0));

    var now = performance.now();
    if (previous && now > previous.at) {
      var rate = Math.max(0, (total - previous.total) * 1000 / (now - previous.at));
      rates.push(rate);
      if (rates.length > 60) rates.shift();
      set('close-rate', rate < 10 ? rate.toFixed(1) : num(Math.round(rate)));
      drawSpark();
    }
    previous = {at: now, total: total};

    var lateness = stats.latenessMillis || {};
    set('lateness-p50', millis(lateness.p50));
    set('lateness-p99', millis(lateness.p99));
    set('lateness-p999', millis(lateness.p999));
    set('lateness-max', millis(lateness.max));
    set('lateness-count', num(lateness.count));

    set('close-retries', num(stats.closeRetries));
    set('batches-given-up', num(stats.closeBatchesGivenUp));
    set('reminders-sent', num(stats.remindersSent));
    set('orders-created', num(stats.ordersCreated));

    var pending = stats.pendingTimers || {total: 0, byShard: []};
    set('pending-total', num(pending.total));
    renderShards(pending.byShard || []);
  }

  function drawSpark() {
    var svg = $('rate-spark');
    var max = Math.max.apply(null, rates.concat([1]));
    var width = 300 / 60;
    svg.innerHTML = rates.map(function (rate, i) {
      var h = Math.max(rate > 0 ? 2 : 0.5, rate / max * 46);
      var x = (60 - rates.length + i) * width;
      return '<rect x="' + x.toFixed(1) + '" y="' + (48 - h).toFixed(1) + '" width="' + (width - 1).toFixed(1) +
        '" height="' + h.toFixed(1) + '"></rect>';
    }).join('');
  }

  function renderShards(byShard) {
    var max = Math.max.apply(null, byShard.concat([1]));
    $('shards').innerHTML = byShard.map(function (count, shard) {
      var level = count / max;
      var background = count === 0 ? '#eef1f6'
        : 'rgba(53, 99, 233, ' + (0.18 + 0.82 * level).toFixed(2) + ')';
      var color = level > 0.55 ? '#fff' : 'rgba(0,0,0,.6)';
      return '<div class="shard" id="shard-' + shard + '" data-count="' + count + '" title="shard ' + shard + ': ' +
        count + ' pending" style="background:' + background + ';color:' + color + '">' + (count ? esc(count) : '') + '</div>';
    }).join('');
  }

  // ---- latest closes

  function renderCloses(closes) {
    if (!closes.length) {
      $('closes-body').innerHTML = '<tr><td colspan="5" class="muted">no closes yet</td></tr>';
      return;
    }
    $('closes-body').innerHTML = closes.map(function (close) {
      var timeout = close.reason === 'TIMEOUT';
      var late = timeout && close.latenessMillis >= 1000;
      return '<tr data-order-id="' + esc(close.orderId) + '" data-reason="' + esc(close.reason) + '">' +
        '<td><a class="order mono" data-find="' + esc(close.orderId) + '">' + esc(close.orderId) + '</a></td>' +
        '<td><span class="tag tag-' + esc(close.reason) + '">' + esc(close.reason) + '</span></td>' +
        '<td class="mono">' + esc(time(close.closeAt)) + '</td>' +
        '<td class="mono">' + esc(time(close.closedAt)) + '</td>' +
        '<td class="num' + (late ? ' late' : '') + '">' + (timeout ? esc(millis(close.latenessMillis)) :
          '<span class="muted" title="' + esc(millis(-close.latenessMillis)) + ' before the deadline">on request</span>') + '</td></tr>';
    }).join('');
  }

  // ---- /metrics: lateness histogram and alarms

  function parseMetrics(text) {
    var samples = [];
    text.split('\n').forEach(function (line) {
      if (!line || line.charAt(0) === '#') return;
      var m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line.trim());
      if (!m) return;
      var labels = {};
      var re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g, l;
      while ((l = re.exec(m[2] || ''))) labels[l[1]] = l[2];
      samples.push({name: m[1], labels: labels, value: parseFloat(m[3])});
    });
    return samples;
  }

  function renderMetrics(text) {
    var samples = parseMetrics(text);
    // buckets are cumulative; summed over any other labels, then differenced
    var cumulative = {};
    samples.forEach(function (s) {
      if (s.name !== 'ordertimeout_close_lateness_seconds_bucket' || s.labels.le == null) return;
      var le = s.labels.le === '+Inf' ? Infinity : parseFloat(s.labels.le);
      cumulative[le] = (cumulative[le] || 0) + s.value;
    });
    var bounds = Object.keys(cumulative).map(Number).sort(function (a, b) { return a - b; });
    var buckets = [], below = 0;
    bounds.forEach(function (le) {
      buckets.push({le: le, count: Math.max(0, cumulative[le] - below)});
      below = cumulative[le];
    });
    renderHistogram(buckets);

    var alarms = samples.filter(function (s) { return s.name === 'ordertimeout_alarm' && s.labels.code; })
      .sort(function (a, b) { return a.labels.code < b.labels.code ? -1 : 1; });
    $('alarms').innerHTML = alarms.length ? alarms.map(function (s) {
      var firing = s.value > 0;
      return '<li id="alarm-' + esc(s.labels.code) + '" class="' + (firing ? 'firing' : 'ok') + '" data-state="' +
        (firing ? 'FIRING' : 'OK') + '"><span>' + esc(s.labels.code) + '</span><b>' + (firing ? '● FIRING' : '● OK') + '</b></li>';
    }).join('') : '<li class="muted">no alarm gauges</li>';
  }

  function renderHistogram(buckets) {
    var total = buckets.reduce(function (sum, b) { return sum + b.count; }, 0);
    if (!buckets.length || total === 0) {
      $('histogram').innerHTML = '<p class="muted empty">no timeout closes yet</p>';
      return;
    }
    var max = Math.max.apply(null, buckets.map(function (b) { return b.count; }));
    var lower = 0;
    $('histogram').innerHTML = buckets.map(function (b) {
      var pct = b.count / max * 100;
      var label = b.le === Infinity ? '>' + seconds(lower) : '≤' + seconds(b.le);
      lower = b.le;
      return '<div class="bar" data-le="' + (b.le === Infinity ? '+Inf' : b.le) + '" data-count="' + b.count +
        '" title="' + esc(label) + ': ' + b.count + ' closes">' +
        '<span class="n">' + (b.count ? esc(num(b.count)) : '') + '</span>' +
        '<div class="fill' + (b.count ? '' : ' zero') + '" style="height:' + (b.count ? Math.max(pct * 0.8, 2) : 0.5).toFixed(1) + '%"></div>' +
        '<span class="le">' + esc(label) + '</span></div>';
    }).join('');
  }

  // ---- one order and its log

  function find(id) {
    id = String(id || '').trim();
    $('search-input').value = id;
    var out = $('search-result');
    if (!/^[0-9]{1,19}$/.test(id)) {
      out.innerHTML = '<p class="error">An order id is a decimal number.</p>';
      return;
    }
    out.innerHTML = '<p class="muted">looking up ' + esc(id) + '…</p>';
    Promise.all([api('/v1/orders/' + id), api('/v1/admin/orders/' + id + '/log')]).then(function (results) {
      var order = results[0], log = results[1];
      if (order.status === 404) {
        out.innerHTML = '<p class="error" id="order-not-found">No order ' + esc(id) + '.</p>';
        return;
      }
      var o = ok(order), lines = ok(log);
      var items = (o.items || []).map(function (i) { return esc(i.sku) + ' × ' + esc(i.qty); }).join(', ');
      out.innerHTML = '<dl id="order-detail" data-order-id="' + esc(o.id) + '">' +
        '<dt>id</dt><dd class="mono">' + esc(o.id) + '</dd>' +
        '<dt>status</dt><dd><span id="order-status" class="tag tag-' + esc(o.status) + '">' + esc(o.status) + '</span>' +
        (o.closeReason ? ' <span class="tag tag-' + esc(o.closeReason) + '">' + esc(o.closeReason) + '</span>' : '') + '</dd>' +
        '<dt>user</dt><dd>' + esc(o.userId) + ' · ' + esc(o.category) + '</dd>' +
        '<dt>items</dt><dd>' + items + '</dd>' +
        '<dt>created</dt><dd class="mono">' + esc(time(o.createdAt)) + '</dd>' +
        '<dt>deadline</dt><dd class="mono">' + esc(time(o.closeAt)) + '</dd>' +
        (o.paidAt ? '<dt>paid</dt><dd class="mono">' + esc(time(o.paidAt)) + '</dd>' : '') +
        (o.closedAt ? '<dt>closed</dt><dd class="mono">' + esc(time(o.closedAt)) + '</dd>' : '') +
        '</dl><h2>Log</h2><ul id="order-log" class="timeline">' + (lines.length ? lines.map(function (line) {
          return '<li data-event="' + esc(line.event) + '"><b>' + esc(line.event) + '</b>' +
            (line.detail ? ' <span class="muted">' + esc(line.detail) + '</span>' : '') +
            '<span class="when mono">' + esc(line.at) + '</span></li>';
        }).join('') : '<li class="muted">no log lines (deleted by retention)</li>') + '</ul>';
    }).catch(function (e) {
      if (e instanceof Unauthorized) { showLogin('That key was refused.'); return; }
      out.innerHTML = '<p class="error">Lookup failed: ' + esc(e.message || e) + '</p>';
    });
  }

  // ---- bulk jobs

  function renderJobs(jobs) {
    $('jobs-body').innerHTML = jobs.length ? jobs.map(function (job) {
      return '<tr data-job="' + esc(job.id) + '" title="' + esc(job.error || JSON.stringify(job.target)) + '">' +
        '<td class="mono">' + esc(job.id) + '</td><td>' + esc(job.kind.replace('BULK_', '').toLowerCase()) + '</td>' +
        '<td><span class="tag tag-' + esc(job.status) + '">' + esc(job.status) + '</span></td>' +
        '<td class="num">' + num(job.done) + ' / ' + num(job.total) + '</td><td class="num">' + num(job.changed) + '</td>' +
        '<td class="num">' + num(job.skipped) + '</td><td class="num">' + num(job.failed) + '</td></tr>';
    }).join('') : '<tr><td colspan="7" class="muted">no jobs yet</td></tr>';
  }

  // ---- order search: the filter of the form, pages by cursor

  var FILTERS = ['status', 'client', 'userId', 'sku', 'dueAfter', 'dueBefore'];
  var nextCursor = null;

  function filter() {
    var f = {};
    FILTERS.forEach(function (name) {
      var value = $('f-' + name).value.trim();
      if (!value) return;
      // datetime-local has no zone: read as UTC, like every time on this page
      f[name] = name.indexOf('due') === 0 ? new Date(value + 'Z').toISOString() : value;
    });
    return f;
  }
  function searchOrders(more) {
    var query = new URLSearchParams(filter());
    query.set('limit', '50');
    if (more && nextCursor) query.set('cursor', nextCursor);
    api('/v1/admin/orders?' + query.toString()).then(ok).then(function (page) {
      var rows = page.orders.map(function (o) {
        var items = (o.items || []).map(function (i) { return esc(i.sku) + ' × ' + esc(i.qty); }).join(', ');
        return '<tr><td><a class="order mono" data-find="' + esc(o.id) + '">' + esc(o.id) + '</a></td><td>' + esc(o.userId) + '</td>' +
          '<td><span class="tag tag-' + esc(o.status) + '">' + esc(o.status) + '</span></td><td>' + items + '</td>' +
          '<td>' + esc((o.closeAt || '').replace('T', ' ').slice(0, 19)) + '</td></tr>';
      }).join('');
      if (more) $('orders-body').insertAdjacentHTML('beforeend', rows);
      else $('orders-body').innerHTML = rows || '<tr><td colspan="5" class="muted">no order matches</td></tr>';
      nextCursor = page.next;
      $('orders-more').hidden = !page.next;
      set('orders-note', '');
    }).catch(function (e) {
      if (e instanceof Unauthorized) { showLogin('That key was refused.'); return; }
      set('orders-note', 'Search failed: ' + (e.message || e));
    });
  }
  function bulkClose() {
    var f = filter();
    if (!Object.keys(f).length) { set('orders-note', 'Set at least one filter before a bulk close.'); return; }
    api('/v1/admin/orders/bulk-close', {filter: f, dryRun: true}).then(ok).then(function (counts) {
      if (!counts.unpaid) { set('orders-note', 'No unpaid order matches: nothing to close.'); return null; }
      if (!confirm('Close ' + counts.unpaid + ' unpaid orders (of ' + counts.matched + ' matching), reason ADMIN?')) return null;
      return api('/v1/admin/orders/bulk-close', {filter: f});
    }).then(function (result) {
      if (!result) return;
      if (result.status !== 202) throw new Error((result.body && result.body.code) || ('HTTP ' + result.status));
      set('orders-note', 'Job ' + result.body.id + ' queued: ' + result.body.total + ' orders. Progress under Bulk jobs.');
    }).catch(function (e) {
      if (e instanceof Unauthorized) { showLogin('That key was refused.'); return; }
      set('orders-note', 'Bulk close failed: ' + (e.message || e));
    });
  }

  // ---- wiring

  $('login-form').addEventListener('submit', function (event) {
    event.preventDefault();
    var value = $('key-input').value.trim();
    if (!value) return;
    sessionStorage.setItem(KEY_STORE, value);
    $('key-input').value = '';
    previous = null;
    loop();
  });
  $('forget').addEventListener('click', function () {
    sessionStorage.removeItem(KEY_STORE);
    showLogin('');
  });
  $('search-form').addEventListener('submit', function (event) {
    event.preventDefault();
    find($('search-input').value);
  });
  $('orders-form').addEventListener('submit', function (event) {
    event.preventDefault();
    searchOrders(false);
  });
  $('orders-more').addEventListener('click', function () { searchOrders(true); });
  $('bulk-close').addEventListener('click', bulkClose);
  $('orders-body').addEventListener('click', function (event) {
    var target = event.target.closest('[data-find]');
    if (target) find(target.getAttribute('data-find'));
  });
  $('closes-body').addEventListener('click', function (event) {
    var target = event.target.closest('[data-find]');
    if (target) find(target.getAttribute('data-find'));
  });

  var initialOrder = readFragment();
  if (key()) {
    showBoard();
    loop();
    if (initialOrder) find(initialOrder);
  } else {
    showLogin('');
  }
})();
