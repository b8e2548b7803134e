'use strict';
window.addEventListener(
    'error',
    function(e) { document.body.dataset.error = String(e.message || e); });
const COLORS = [
  '#bcd7f5', '#c8ecc4', '#f8dcb0', '#f3c1c1', '#dccdf2', '#fbf1b4', '#bdeef0',
  '#f6cfe6'
];
const ROLE_COLORS = {
  param : '#5b8def',
  grad : '#e4974b',
  opt_state : '#9b6bd6',
  activation : '#55b38a'
};
const SVGNS = 'http://www.w3.org/2000/svg';

function el(tag, attrs, children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'text')
      node.textContent = v;
    else if (k === 'cls')
      node.className = v;
    else
      node.setAttribute(k, v);
  }
  for (const child of children || [])
    node.appendChild(child);
  return node;
}
function svg(tag, attrs) {
  const node = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'text')
      node.textContent = v;
    else
      node.setAttribute(k, v);
  }
  return node;
}
function bytes(n) {
  const units = [ 'B', 'KiB', 'MiB', 'GiB', 'TiB' ];
  let u = 0;
  while (Math.abs(n) >= 1024 && u < units.length - 1) {
    n /= 1024;
    u++;
  }
  return (u ? n.toFixed(1) : String(n)) + ' ' + units[u];
}
function section(title, id) {
  const s = el('section', {id : id}, [ el('h2', {text : title}) ]);
  document.querySelector('main').appendChild(s);
  return s;
}

const data = JSON.parse(document.getElementById('partita-data').textContent);
const report =
    data.report || {collectives : [], totals : {}, memory : {}, meshes : []};
let selectValue = function() {};

function drawHeader() {
  const meshes =
      (report.meshes || [])
          .map(m => '@' + m.name + ' ' +
                    m.axes.map(a => a.name + '=' + a.size).join(','));
  const t = report.totals || {};
  const facts = el('div', {cls : 'facts'}, [
    el('span', {},
       [
         document.createTextNode('mesh '),
         el('b', {text : meshes.join('; ') || 'none'})
       ]),
    el('span', {},
       [
         el('b', {text : String(t.collectives || 0)}),
         document.createTextNode(' collectives per step')
       ]),
    el('span', {},
       [
         el('b', {text : bytes(Math.round(t.bytes_per_device || 0))}),
         document.createTextNode(' sent per device')
       ]),
    el('span', {},
       [
         el('b', {text : (t.est_time_us || 0).toFixed(1) + ' µs'}),
         document.createTextNode(' estimated communication')
       ]),
    el('span', {},
       [
         el('b',
            {text : bytes((report.memory || {}).peak_bytes_per_device || 0)}),
         document.createTextNode(' peak memory per device')
       ]),
  ]);
  document.body.insertBefore(
      el('header', {},
         [ el('h1', {text : 'Partita report: ' + data.title}), facts ]),
      document.querySelector('main'));
}

function drawGraph() {
  const s = section('Program', 'program');
  s.appendChild(el('p', {
    cls : 'note',
    text :
        'The global program with every tensor\'s sharding (after propagation). ' +
            'Click an op or argument to see which device holds which block of its value; collectives the partitioner ' +
            'inserted are listed below.'
  }));
  const box = el('div', {id : 'graph-box'});
  const panel = el('div', {id : 'value-panel'});
  s.appendChild(el('div', {cls : 'split'}, [ box, panel ]));
  const nodes = [];
  const producer = new Map();
  for (const fn of data.functions) {
    fn.args.forEach((v, i) => {
      const node = {
        kind : 'arg',
        label : fn.name + ' arg ' + i,
        values : v === null ? [] : [ v ],
        inputs : [],
        depth : 0
      };
      nodes.push(node);
      if (v !== null)
        producer.set(v, node);
    });
    for (const op of fn.ops) {
      const inputs = op.operands.filter(v => v !== null && producer.has(v))
                         .map(v => producer.get(v));
      const depth = 1 + Math.max(0, ...inputs.map(n => n.depth));
      const short = op.op.replace(/^partita\./, '').replace(/^func\./, '');
      const node = {
        kind : /all_|reduce_scatter|collective_permute|reshard/.test(short)
                   ? 'collective'
                   : 'op',
        label : short,
        loc : op.loc,
        values : op.results.filter(v => v !== null),
        inputs : inputs,
        depth : depth
      };
      nodes.push(node);
      for (const v of node.values)
        producer.set(v, node);
    }
  }
  const limit = 3000;
  const shown = nodes.slice(0, limit);
  const rows = [];
  for (const n of shown) {
    (rows[n.depth] = rows[n.depth] || []).push(n);
  }
  const W = 170, H = 40, GX = 18, GY = 34;
  let width = 0;
  rows.forEach((row, d) => row.forEach((n, i) => {
    n.x = 10 + i * (W + GX);
    n.y = 10 + d * (H + GY);
    width = Math.max(width, n.x + W + 10);
  }));
  const height = 10 + rows.length * (H + GY);
  const g = svg('svg', {
    width : width,
    height : height,
    id : 'graph',
    'data-nodes' : String(shown.length)
  });
  for (const n of shown)
    for (const p of n.inputs) {
      if (p.x === undefined)
        continue;
      g.appendChild(svg('path', {
        class : 'edge',
        d : 'M' + (p.x + W / 2) + ',' + (p.y + H) + ' C' + (p.x + W / 2) + ',' +
                (p.y + H + GY / 2) + ' ' + (n.x + W / 2) + ',' +
                (n.y - GY / 2) + ' ' + (n.x + W / 2) + ',' + n.y
      }));
    }
  const byValue = new Map();
  for (const n of shown) {
    const v = n.values.length ? data.values[n.values[0]] : null;
    const group = svg('g', {
      class : 'node ' + n.kind,
      transform : 'translate(' + n.x + ',' + n.y + ')'
    });
    group.appendChild(svg('rect', {width : W, height : H, rx : 4}));
    group.appendChild(svg('text', {
      x : 6,
      y : 15,
      text : (n.label + (n.loc && n.kind !== 'arg' ? ' ' + n.loc : ''))
                 .slice(0, 30)
    }));
    group.appendChild(svg('text', {
      x : 6,
      y : 31,
      fill : '#394152',
      text : v ? (v.spec || 'unsharded').slice(0, 30) : ''
    }));
    const title = svg('title', {
      text : n.label + (n.loc ? '\n' + n.loc : '') +
                 (v ? '\n' + v.type + '\n' + (v.spec || '') : '')
    });
    group.appendChild(title);
    if (n.values.length) {
      group.addEventListener('click', () => selectValue(n.values[0]));
      byValue.set(n.values[0], group);
    }
    g.appendChild(group);
  }
  box.appendChild(g);
  if (nodes.length > limit)
    box.appendChild(el('p', {
      cls : 'note',
      text : 'First ' + limit + ' of ' + nodes.length + ' nodes drawn.'
    }));
  return {panel : panel, byValue : byValue};
}

function drawValue(panel, index) {
  panel.textContent = '';
  const v = data.values[index];
  panel.appendChild(el('h2', {text : v.name}));
  const facts = [
    [ 'what', v.what ], [ 'type', v.type ], [ 'sharding', v.spec || 'none' ],
    [ 'local block', v.local || '' ],
    [ 'replicated over', (v.replicated || []).join(', ') || '—' ]
  ];
  if (v.partial)
    facts.push([ 'partial', v.partial ]);
  panel.appendChild(
      el('table', {}, facts.map(([ k, val ]) => el('tr', {}, [
                                  el('th', {text : k}), el('td', {text : val})
                                ]))));
  if (!v.grid) {
    panel.appendChild(el('p', {
      cls : 'note',
      text : v.sharding ? 'Too many blocks to draw.' : 'No sharding.'
    }));
    return;
  }
  if (v.leading_split)
    panel.appendChild(el(
        'p',
        {cls : 'note', text : 'The first block of the leading dimensions:'}));
  const colorOf = new Map();
  const grid = el('table', {cls : 'grid', id : 'blocks'});
  grid.appendChild(
      el('tr', {},
         [ el('th') ].concat(v.grid.cols.map(c => el('th', {text : c})))));
  v.grid.cells.forEach((row, i) => {
    grid.appendChild(el(
        'tr', {}, [ el('th', {text : v.grid.rows[i]}) ].concat(row.map(cell => {
          if (!colorOf.has(cell))
            colorOf.set(cell, COLORS[colorOf.size % COLORS.length]);
          return el('td',
                    {text : cell, style : 'background:' + colorOf.get(cell)});
        }))));
  });
  panel.appendChild(el('p', {
    cls : 'note',
    text : 'Which devices hold each block (' + v.mesh + '):'
  }));
  panel.appendChild(grid);
}

function drawValues(graph) {
  const s = section('Tensors and their shardings', 'tensors');
  const table = el('table', {id : 'values'});
  table.appendChild(el('tr', {}, [
    'name', 'type', 'sharding', 'local block', 'what'
  ].map(h => el('th', {text : h}))));
  const rows = data.values.map((v, i) => {
    const row = el('tr', {'data-index' : String(i)}, [
      el('td', {text : v.name}), el('td', {text : v.type}),
      el('td', {text : v.spec || ''}), el('td', {text : v.local || ''}),
      el('td', {text : v.what})
    ]);
    row.addEventListener('click', () => selectValue(i));
    table.appendChild(row);
    return row;
  });
  s.appendChild(el('div', {cls : 'scroll'}, [ table ]));
  let previous = null;
  selectValue = function(i) {
    drawValue(graph.panel, i);
    if (previous !== null) {
      rows[previous].classList.remove('selected');
      const n = graph.byValue.get(previous);
      if (n)
        n.classList.remove('selected');
    }
    rows[i].classList.add('selected');
    const n = graph.byValue.get(i);
    if (n)
      n.classList.add('selected');
    previous = i;
  };
  const first = data.values.findIndex(
      v => v.grid && v.grid.cells.length * v.grid.cells[0].length > 1);
  if (data.values.length)
    selectValue(first >= 0 ? first : 0);
}

function drawCollectives() {
  const s = section('Collectives', 'collectives-section');
  const list = report.collectives || [];
  s.appendChild(el('p', {
    cls : 'note',
    text :
        list.length + ' collective ops (' + (report.totals.collectives || 0) +
            ' executions per step); bytes per device by the bus-traffic convention; time from the cost model.'
  }));
  const table = el('table', {id : 'collectives'});
  table.appendChild(el('tr', {}, [
    '#', 'kind', 'axes', 'shape', 'dtype', 'bytes / device', 'count', 'est. µs',
    'where', 'reason'
  ].map(h => el('th', {text : h}))));
  list.forEach((c, i) => {
    const row = el(
        'tr', {
          cls : 'collective',
          'data-kind' : c.kind,
          'data-axes' : c.mesh_axes.join(','),
          'data-bytes' : String(c.bytes_per_device),
          'data-count' : String(c.count),
          'data-time' : String(c.est_time_us),
          'data-loc' : c.loc
        },
        [
          el('td', {cls : 'num', text : String(i + 1)}),
          el('td', {text : c.kind}), el('td', {text : c.mesh_axes.join(', ')}),
          el('td', {
            text :
                JSON.stringify(c.in_shape) + ' → ' + JSON.stringify(c.out_shape)
          }),
          el('td', {text : c.dtype}),
          el('td', {cls : 'num', text : bytes(Math.round(c.bytes_per_device))}),
          el('td', {cls : 'num', text : String(c.count)}),
          el('td', {cls : 'num', text : c.est_time_us.toFixed(2)}),
          el('td', {text : c.loc}), el('td', {cls : 'reason', text : c.reason})
        ]);
    table.appendChild(row);
  });
  s.appendChild(table);
}

function drawMemory() {
  const m = data.memory;
  const s = section('Memory per device over the program', 'memory');
  const mem = report.memory || {};
  s.appendChild(el('p', {
    cls : 'note',
    text :
        'Bytes alive on one device at each program point of the partitioned program, ' +
            'by role (arguments\' roles; everything else is activation). Peak ' +
            bytes(mem.peak_bytes_per_device || 0) +
            (m.step > 1 ? '; every ' + m.step + ' points the largest is drawn.'
                        : '.')
  }));
  const W = 960, H = 260, L = 70, B = 24;
  const chart = svg('svg', {
    width : W + L + 10,
    height : H + B + 10,
    id : 'memory-chart',
    'data-points' : String(m.series.length)
  });
  const totals = m.series.map(p => p.reduce((a, b) => a + b, 0));
  const top = Math.max(1, ...totals);
  const x = i =>
      L + (m.series.length > 1 ? i * W / (m.series.length - 1) : W / 2);
  const y = b => 5 + H - b * H / top;
  let base = m.series.map(() => 0);
  m.roles.forEach((role, r) => {
    const upper = base.map((b, i) => b + m.series[i][r]);
    if (upper.every((u, i) => u === base[i])) {
      base = upper;
      return;
    }
    let d = 'M' + x(0) + ',' + y(upper[0]);
    for (let i = 1; i < upper.length; i++)
      d += ' L' + x(i) + ',' + y(upper[i]);
    for (let i = upper.length - 1; i >= 0; i--)
      d += ' L' + x(i) + ',' + y(base[i]);
    chart.appendChild(svg('path', {
      d : d + ' Z',
      fill : ROLE_COLORS[role],
      opacity : 0.85,
      'data-role' : role
    }));
    base = upper;
  });
  chart.appendChild(
      svg('line',
          {x1 : L, y1 : 5 + H, x2 : L + W, y2 : 5 + H, stroke : '#394152'}));
  chart.appendChild(
      svg('line', {x1 : L, y1 : 5, x2 : L, y2 : 5 + H, stroke : '#394152'}));
  for (const f of [0, 0.5, 1])
    chart.appendChild(
        svg('text',
            {x : 4, y : y(top * f) + 4, text : bytes(Math.round(top * f))}));
  chart.appendChild(svg('text', {
    x : L + W / 2 - 60,
    y : H + B + 4,
    text : 'program point (' + m.points + ')'
  }));
  s.appendChild(chart);
  s.appendChild(el(
      'div', {cls : 'legend'},
      m.roles.map(
          r => el('span', {}, [
            el('i', {style : 'background:' + ROLE_COLORS[r]}),
            document.createTextNode(
                r + ' ' + bytes(((mem.by_role || {})[r]) || 0) + ' at the peak')
          ]))));
}

function drawSchedule() {
  if (!data.schedule)
    return;
  const s = section('Pipeline schedule', 'schedule');
  s.appendChild(el('pre', {text : data.schedule}));
}

document.body.appendChild(el('main'));
drawHeader();
const graph = drawGraph();
drawCollectives();
drawMemory();
drawSchedule();
drawValues(graph);
document.body.dataset.ready = '1';
