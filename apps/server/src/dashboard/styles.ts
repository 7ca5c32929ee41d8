/** The dashboard's whole stylesheet, inlined in every page (no external assets). */
export const STYLES = `
:root{
  --bg:#f5f6f8;--panel:#fff;--border:#e4e7ec;--border-strong:#d0d5dd;--text:#1d2433;--muted:#667085;--faint:#98a2b3;
  --accent:#3d5afe;--accent-ink:#2a3fd1;--accent-bg:#eef1ff;
  --side:#111827;--side-text:#aab2c0;--side-hover:#1f2937;
  --ok:#16803c;--ok-bg:#e7f6ec;--bad:#c0262d;--bad-bg:#fdecec;--warn:#b45309;--warn-bg:#fff4e0;
  --s-scheduled:#2563eb;--s-scheduled-bg:#e8f0fe;
  --s-awaiting:#7c3aed;--s-awaiting-bg:#f1ebfe;
  --s-leased:#c2710c;--s-leased-bg:#fff3df;
  --s-succeeded:#16803c;--s-succeeded-bg:#e7f6ec;
  --s-cancelled:#5b6472;--s-cancelled-bg:#eef0f3;
  --s-dead:#c0262d;--s-dead-bg:#fdecec;
  --s-quarantined:#c2410c;--s-quarantined-bg:#fff0e6;
  --radius:8px;--shadow:0 1px 2px rgba(16,24,40,.05);
  --font:-apple-system,BlinkMacSystemFont,"Segoe UI",Roboto,"Helvetica Neue",Arial,"Noto Sans","Liberation Sans",sans-serif;
  --mono:ui-monospace,SFMono-Regular,"SF Mono",Menlo,Consolas,"Liberation Mono","DejaVu Sans Mono",monospace;
}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;background:var(--bg);color:var(--text);font:13px/1.45 var(--font);font-feature-settings:"tnum" 1}
a{color:var(--accent-ink);text-decoration:none}
a:hover{text-decoration:underline}
h1,h2,h3{margin:0;font-weight:600}
code,.mono,pre{font-family:var(--mono);font-size:12px}
.muted{color:var(--muted)}
.nowrap{white-space:nowrap}
/* shell */
.shell{display:grid;grid-template-columns:216px minmax(0,1fr);min-height:100vh;background:linear-gradient(to right,var(--side) 216px,var(--bg) 216px)}
.side{background:var(--side);color:var(--side-text);display:flex;flex-direction:column;position:sticky;top:0;height:100vh}
.brand{display:flex;align-items:center;gap:10px;padding:18px 18px 14px;color:#fff;font-weight:650;font-size:15px;letter-spacing:.2px}
.brand svg{flex:none}
.brand small{display:block;font-weight:400;font-size:11px;color:var(--side-text);letter-spacing:0}
.nav{display:flex;flex-direction:column;padding:6px 10px;gap:1px}
.nav a{display:flex;align-items:center;gap:10px;padding:7px 10px;border-radius:6px;color:var(--side-text);font-weight:500}
.nav a:hover{background:var(--side-hover);color:#fff;text-decoration:none}
.nav a.on{background:#263042;color:#fff}
.nav svg{flex:none;opacity:.85}
.nav .cnt{margin-left:auto;font-size:11px;padding:0 7px;border-radius:9px;background:#2b3445;color:#d0d5dd;line-height:18px}
.nav .cnt.bad{background:#7f1d1d;color:#fee2e2}
.side-foot{margin-top:auto;padding:14px 18px;border-top:1px solid #1f2937;font-size:12px;display:grid;gap:6px}
.side-foot .row{display:flex;justify-content:space-between;gap:8px}
.side-foot b{color:#e5e7eb;font-weight:500}
.live{display:inline-flex;align-items:center;gap:6px}
.live i{width:7px;height:7px;border-radius:50%;background:#6b7280;display:inline-block}
.live.on i{background:#22c55e;box-shadow:0 0 0 3px rgba(34,197,94,.18)}
.main{min-width:0;display:flex;flex-direction:column}
.top{display:flex;align-items:center;gap:16px;padding:14px 28px;background:var(--panel);border-bottom:1px solid var(--border);position:sticky;top:0;z-index:5}
.top h1{font-size:17px}
.crumbs{color:var(--muted);font-size:12px;margin-bottom:1px}
.crumbs a{color:var(--muted)}
.who{margin-left:auto;display:flex;align-items:center;gap:10px;color:var(--muted);white-space:nowrap}
.who b{color:var(--text);font-weight:500}
.avatar{width:26px;height:26px;border-radius:50%;background:var(--accent-bg);color:var(--accent-ink);display:inline-flex;align-items:center;justify-content:center;font-weight:600;font-size:12px;text-transform:uppercase}
.content{padding:22px 28px 40px;display:grid;gap:18px;max-width:1560px;width:100%}
/* flash */
.flash{margin:16px 28px 0;padding:10px 14px;border-radius:var(--radius);border:1px solid;display:flex;gap:10px;align-items:center}
.flash.success{background:var(--ok-bg);border-color:#b7e4c7;color:#14532d}
.flash.error{background:var(--bad-bg);border-color:#f5c2c2;color:#7f1d1d}
.flash.info{background:var(--accent-bg);border-color:#c7d0ff;color:#1e2a78}
/* cards */
.card{background:var(--panel);border:1px solid var(--border);border-radius:var(--radius);box-shadow:var(--shadow);min-width:0}
.card-h{display:flex;align-items:center;gap:12px;padding:12px 16px;border-bottom:1px solid var(--border)}
.card-h h2{font-size:13.5px}
.card-h .sub{color:var(--muted);font-weight:400;margin-left:6px}
.card-actions{margin-left:auto;display:flex;gap:8px;align-items:center}
.card-b{padding:14px 16px}
.card.flush .card-b{padding:0;overflow-x:auto}
.cols{display:grid;gap:18px;grid-template-columns:minmax(0,2fr) minmax(0,1fr)}
.cols.even{grid-template-columns:minmax(0,1fr) minmax(0,1fr)}
.stack{display:grid;gap:18px;align-content:start;min-width:0}
h3.notice{font-size:11px;text-transform:uppercase;letter-spacing:.4px;font-weight:600;margin:0 0 8px}
.card-b h3.notice~h3.notice{margin-top:14px}
/* stat tiles */
.stats{display:grid;grid-template-columns:repeat(7,minmax(0,1fr));gap:12px}
.stat{background:var(--panel);border:1px solid var(--border);border-radius:var(--radius);padding:12px 14px;box-shadow:var(--shadow);display:block;color:var(--text);position:relative;overflow:hidden}
.stat:hover{text-decoration:none;border-color:var(--border-strong)}
.stat::before{content:"";position:absolute;left:0;top:0;bottom:0;width:3px;background:var(--c,var(--border))}
.stat .l{color:var(--muted);font-size:12px;display:flex;align-items:center;gap:6px}
.stat .v{font-size:24px;font-weight:600;margin-top:4px;letter-spacing:-.3px}
.stat .v.zero{color:var(--faint)}
/* tables */
table.grid{width:100%;border-collapse:collapse}
.grid th{font-size:11px;text-transform:uppercase;letter-spacing:.4px;color:var(--muted);font-weight:600;text-align:left;padding:8px 12px;background:#fafbfc;border-bottom:1px solid var(--border);white-space:nowrap}
.grid td{padding:8px 12px;border-bottom:1px solid #eef0f3;vertical-align:middle}
.grid tbody tr:last-child td{border-bottom:0}
.grid tbody tr:hover td{background:#fafbff}
.grid .r{text-align:right}
.grid .num,.num{font-variant-numeric:tabular-nums}
.zero{color:#c4cad4}
.grid td.acts{text-align:right;white-space:nowrap}
.grid td.acts form{display:inline-flex}
.jn{font-weight:500}
.q{color:var(--text)}
/* badges, dots, tags */
.badge{display:inline-flex;align-items:center;gap:4px;padding:1px 8px;border-radius:10px;font-size:11.5px;font-weight:500;white-space:nowrap;line-height:18px;color:var(--c);background:var(--cb)}
.badge small{font-weight:400;opacity:.85}
.dot{display:inline-block;width:8px;height:8px;border-radius:50%;background:var(--c)}
.s-scheduled{--c:var(--s-scheduled);--cb:var(--s-scheduled-bg)}
.s-awaiting{--c:var(--s-awaiting);--cb:var(--s-awaiting-bg)}
.s-leased{--c:var(--s-leased);--cb:var(--s-leased-bg)}
.s-succeeded{--c:var(--s-succeeded);--cb:var(--s-succeeded-bg)}
.s-cancelled{--c:var(--s-cancelled);--cb:var(--s-cancelled-bg)}
.s-dead{--c:var(--s-dead);--cb:var(--s-dead-bg)}
.s-quarantined{--c:var(--s-quarantined);--cb:var(--s-quarantined-bg)}
.pill{display:inline-flex;align-items:center;gap:5px;padding:1px 8px;border-radius:10px;font-size:11.5px;font-weight:500;line-height:18px;background:#eef0f3;color:#4b5563;white-space:nowrap}
.pill.ok{background:var(--ok-bg);color:var(--ok)}
.pill.bad{background:var(--bad-bg);color:var(--bad)}
.pill.warn{background:var(--warn-bg);color:var(--warn)}
.pill.info{background:var(--accent-bg);color:var(--accent-ink)}
.tags{display:inline-flex;flex-wrap:wrap;gap:4px}
.tag{display:inline-block;padding:0 7px;border-radius:4px;font-size:11.5px;line-height:19px;background:#f2f4f7;border:1px solid #e4e7ec;color:#344054;white-space:nowrap}
a.tag:hover{border-color:#c7d0ff;background:var(--accent-bg);text-decoration:none}
.tag .tk{color:var(--muted)}
.grid td .tags{min-width:160px}
.more{font-size:11px;color:var(--muted);align-self:center}
/* buttons and forms */
.btn{display:inline-flex;align-items:center;gap:6px;height:30px;padding:0 12px;border-radius:6px;border:1px solid var(--border-strong);background:#fff;color:var(--text);font:500 12.5px var(--font);cursor:pointer;white-space:nowrap}
.btn:hover{background:#f9fafb;text-decoration:none}
.btn-sm{height:26px;padding:0 10px;font-size:12px}
.btn-primary{background:var(--accent);border-color:var(--accent);color:#fff}
.btn-primary:hover{background:var(--accent-ink)}
.btn-danger{color:var(--bad);border-color:#f1b8b8}
.btn-danger:hover{background:var(--bad-bg)}
form.act{display:inline-flex;gap:6px;align-items:center;margin:0}
input[type=text],input[type=number],input[type=password],select{height:30px;border:1px solid var(--border-strong);border-radius:6px;padding:0 9px;font:13px var(--font);background:#fff;color:var(--text);min-width:0}
input:focus,select:focus,.btn:focus-visible{outline:2px solid #c7d0ff;outline-offset:1px;border-color:var(--accent)}
input.limit{width:72px}
.act input{height:26px;font-size:12px}
.notice.spaced{margin-top:10px}
.edges{list-style:none;margin:0;padding:0;display:grid;gap:8px}
.edges li{display:flex;align-items:center;gap:10px;flex-wrap:wrap}
.filters{display:flex;flex-wrap:wrap;gap:10px;align-items:flex-end}
.filters label{display:grid;gap:4px;font-size:11px;font-weight:600;color:var(--muted);text-transform:uppercase;letter-spacing:.4px}
.filters .grow{flex:1 1 220px}
.filters .grow input{width:100%}
.chips{display:flex;flex-wrap:wrap;gap:6px;align-items:center;margin-top:12px}
.chip{display:inline-flex;align-items:center;gap:6px;padding:2px 4px 2px 9px;border-radius:14px;background:var(--accent-bg);color:var(--accent-ink);font-size:12px;font-weight:500}
.chip a{display:inline-flex;width:18px;height:18px;border-radius:50%;align-items:center;justify-content:center;color:var(--accent-ink)}
.chip a:hover{background:#dfe5ff;text-decoration:none}
.facets{display:grid;gap:8px;margin-top:12px;padding-top:12px;border-top:1px dashed var(--border)}
.facet{display:flex;gap:8px;align-items:baseline;flex-wrap:wrap}
.facet>b{font-size:11px;text-transform:uppercase;letter-spacing:.4px;color:var(--muted);min-width:72px}
.facet .tag b{font-weight:500;color:var(--muted);margin-left:5px}
.facet .tag.on{background:var(--accent-bg);border-color:#c7d0ff;color:var(--accent-ink)}
/* editing forms */
.editor{display:grid;gap:16px}
.editor .fields{display:grid;grid-template-columns:repeat(auto-fill,minmax(240px,1fr));gap:14px 18px}
.field{display:grid;gap:4px;align-content:start;min-width:0}
.field>span{font-size:11px;font-weight:600;color:var(--muted);text-transform:uppercase;letter-spacing:.4px}
.field small{color:var(--muted);font-size:11.5px}
.field.wide{grid-column:1/-1}
.field input[type=text],.field select{width:100%}
.field.check{grid-template-columns:auto 1fr;align-items:center;gap:8px}
.field.check span{text-transform:none;letter-spacing:0;font-size:12.5px;color:var(--text);font-weight:500}
textarea{width:100%;min-height:120px;border:1px solid var(--border-strong);border-radius:6px;padding:8px 10px;font:12px/1.5 var(--mono);background:#fff;color:var(--text);resize:vertical}
textarea:focus{outline:2px solid #c7d0ff;outline-offset:1px;border-color:var(--accent)}
input[readonly]{background:#f9fafb;color:var(--muted)}
.form-actions{display:flex;gap:8px}
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
/* schedules: the action column stays in view even when the table scrolls */
.grid.schedules td .tags{min-width:0}
.grid.schedules th,.grid.schedules td{padding:8px 9px}
.grid.schedules th{white-space:normal}
.grid.schedules td.tags-cell{max-width:180px}
.grid .pinned{position:sticky;right:0;background:var(--panel);box-shadow:-6px 0 6px -6px rgba(16,24,40,.18)}
.grid th.pinned{background:#fafbfc}
.grid td.acts.pinned{display:table-cell}
.grid td.acts>*+*{margin-left:6px}
/* workflow graph */
.wf-graph{overflow:auto;max-width:100%;border:1px solid var(--border);border-radius:6px;background:#fcfcfd}
svg.wf{display:block}
.wf-node rect{fill:var(--cb);stroke:var(--c);stroke-width:1.5}
.wf-node:hover rect{stroke-width:2.5}
.wf-node .wf-dot{fill:var(--c)}
.wf-node text{font:12px var(--font);fill:var(--text)}
.wf-node .wf-name{font-weight:600}
.wf-node .wf-id{font:11px var(--mono);fill:var(--muted)}
.wf-node .wf-state{font-size:11px;fill:var(--c);font-weight:500}
.wf-edge{fill:none;stroke:#98a2b3;stroke-width:1.5}
.wf-edge.gating{stroke-dasharray:5 4}
.legend.spaced-b{margin-bottom:10px}
/* tabs */
.tabs{display:flex;gap:2px;border-bottom:1px solid var(--border);padding:0 16px}
.tabs a{padding:10px 12px;color:var(--muted);font-weight:500;border-bottom:2px solid transparent;margin-bottom:-1px;display:inline-flex;gap:6px;align-items:center}
.tabs a:hover{color:var(--text);text-decoration:none}
.tabs a.on{color:var(--text);border-bottom-color:var(--accent)}
/* pager */
.pager{display:flex;align-items:center;justify-content:space-between;padding:10px 16px;border-top:1px solid var(--border);color:var(--muted);font-size:12px}
.pager .btns{display:flex;gap:8px}
.pager .btn[aria-disabled=true]{opacity:.45;pointer-events:none}
/* empty */
.hint-bar{margin:0;padding:9px 16px;border-bottom:1px solid var(--border);color:var(--muted);background:#fcfcfd;font-size:12px}
.empty{padding:34px 16px;text-align:center;color:var(--muted)}
.empty svg{color:var(--faint)}
.empty-t{margin:8px 0 2px;font-weight:600;color:#475467}
.empty-h{margin:0;font-size:12px}
/* detail */
.kv{display:grid;grid-template-columns:150px minmax(0,1fr);gap:8px 16px;margin:0}
.kv dt{color:var(--muted)}
.kv dd{margin:0;min-width:0;overflow-wrap:anywhere}
.head{display:flex;align-items:center;gap:12px;flex-wrap:wrap}
.head .id{font-family:var(--mono);font-size:15px;font-weight:600}
.head .acts{margin-left:auto;display:flex;gap:8px}
.head .id{min-width:0;overflow-wrap:anywhere}
/* durable promises */
.addr{display:inline-block;max-width:280px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;vertical-align:bottom}
.kv .addr{max-width:100%}
.edges .mono{overflow-wrap:anywhere}
.kv.small{grid-template-columns:120px minmax(0,1fr);gap:4px 12px;margin-bottom:8px}
div.spaced,.cols.spaced{margin-top:14px}
pre.json{margin:0;padding:12px 14px;background:#0f172a;color:#e2e8f0;border-radius:6px;overflow:auto;max-height:360px;font-size:12px;line-height:1.5}
pre.trace{margin:6px 0 0;padding:10px 12px;background:#fff7f7;border:1px solid #f5d0d0;color:#7f1d1d;border-radius:6px;overflow:auto;max-height:260px;white-space:pre-wrap}
.locked{display:flex;gap:10px;align-items:center;padding:12px 14px;border:1px dashed var(--border-strong);border-radius:6px;color:var(--muted);background:#fcfcfd}
.timeline{list-style:none;margin:0;padding:0}
.timeline li{display:grid;grid-template-columns:14px minmax(0,1fr) auto;gap:10px;padding:0 0 14px;position:relative}
.timeline li::before{content:"";position:absolute;left:6px;top:14px;bottom:0;width:2px;background:#eaecf0}
.timeline li:last-child::before{display:none}
.timeline .dot{margin-top:4px;width:10px;height:10px;box-shadow:0 0 0 3px #fff}
.timeline .what{font-weight:500}
.timeline .meta{color:var(--muted);font-size:12px;text-align:right;white-space:nowrap}
details summary{cursor:pointer;color:var(--accent-ink);font-size:12px;margin-top:2px}
/* chart */
.chart{display:block;width:100%;height:150px}
.chart .bg{fill:#fafbfc}
.chart .gl{stroke:#eef0f3;stroke-width:1}
.chart .ok{fill:#34a853}
.chart .bad{fill:#e5484d}
.legend{display:flex;gap:16px;color:var(--muted);font-size:12px;align-items:center;flex-wrap:wrap}
.legend i{display:inline-block;width:9px;height:9px;border-radius:2px;margin-right:5px;vertical-align:-1px}
.axis{display:flex;justify-content:space-between;color:var(--faint);font-size:11px;margin-top:4px}
.big{font-size:20px;font-weight:600;color:var(--text)}
.meter{height:6px;border-radius:3px;background:#eef0f3;overflow:hidden;margin-top:6px}
.meter i{display:block;height:100%;background:var(--accent)}
${Array.from({ length: 21 }, (_, i) => `.meter i.w${i * 5}{width:${i * 5}%}`).join("")}
.legend i.sw-ok{background:#34a853}.legend i.sw-bad{background:#e5484d}
.wgs{display:grid;gap:12px;margin-top:14px}
.login{max-width:380px;margin:10vh auto;background:var(--panel);border:1px solid var(--border);border-radius:12px;padding:28px;box-shadow:0 8px 24px rgba(16,24,40,.08);display:grid;gap:14px}
.login input{width:100%;height:36px}
.login .btn{height:36px;justify-content:center}
.notice{color:var(--muted);font-size:12px;margin:0}
.login h1{font-size:18px}
.login .flash{margin:0}
.brand.plain{padding:0;color:var(--text)}
/* responsive */
@media (max-width:1180px){.stats{grid-template-columns:repeat(4,minmax(0,1fr))}}
@media (max-width:1000px){
  .shell{grid-template-columns:1fr;grid-template-rows:auto 1fr;background:var(--bg)}
  .side{position:static;height:auto;flex-direction:row;flex-wrap:wrap;align-items:center}
  .brand{padding:10px 14px}
  .nav{flex-direction:row;flex-wrap:wrap;padding:6px 8px}
  .nav a{padding:6px 9px}
  .nav svg{display:none}
  .side-foot{display:none}
  .top{position:static;padding:12px 18px}
  .content{padding:16px 18px 32px}
  .flash{margin:12px 18px 0}
  .cols,.cols.even{grid-template-columns:minmax(0,1fr)}
  .hide-narrow{display:none}
}
@media (max-width:700px){.stats{grid-template-columns:repeat(2,minmax(0,1fr))}.kv{grid-template-columns:1fr}}
`;
