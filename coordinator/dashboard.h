/* dashboard.h — the coordinator's web dashboard: one static page that asks
 * for the cluster token (kept in the browser's local storage) and polls the
 * JSON API every two seconds.  Nothing secret is embedded in it. */
#ifndef RT_DASHBOARD_H
#define RT_DASHBOARD_H

#define RT_DASHBOARD_HTML                                                                          \
    "<!doctype html><html><head><meta charset=utf-8><title>ringtrain</title><style>"              \
    "body{font:14px system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;"  \
    "margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}"                   \
    ".failed{color:#b00}.succeeded{color:#070}.running{color:#06c}pre{background:#f6f6f6;"        \
    "padding:8px;max-height:20em;overflow:auto}</style></head><body><h1>ringtrain</h1>"           \
    "<div id=login>Cluster token: <input id=tok type=password size=70> <button "                  \
    "onclick=\"localStorage.rtToken=tok.value;go()\">Connect</button></div>"                       \
    "<h2>Nodes</h2><table id=nodes></table><h2>Jobs</h2><table id=jobs></table>"                  \
    "<h2 id=dt></h2><pre id=detail></pre><script>"                                                 \
    "function api(p){return fetch(p,{headers:{Authorization:'Bearer '+localStorage.rtToken}})"    \
    ".then(r=>{if(r.status==401)throw 'token';return r.json()})}"                                  \
    "function esc(s){return String(s==null?'':s).replace(/[&<>]/g,c=>({'&':'&amp;','<':'&lt;',"   \
    "'>':'&gt;'}[c]))}"                                                                            \
    "function row(c,h){return '<tr>'+c.map(x=>'<'+(h?'th':'td')+'>'+x+'</'+(h?'th':'td')+'>')"    \
    ".join('')+'</tr>'}"                                                                           \
    "function show(id){api('/v1/jobs/'+id).then(d=>{dt.textContent='Job '+id;"                     \
    "detail.textContent=JSON.stringify(d,null,1)})}"                                               \
    "function go(){api('/v1/nodes').then(d=>{login.style.display='none';"                          \
    "nodes.innerHTML=row(['agent','host','state','slots','used','gpus'],1)+d.nodes.map(n=>"        \
    "row([esc(n.agent),esc(n.hostname),n.state,n.slots,n.used,n.gpus])).join('')}).catch(()=>"    \
    "{login.style.display=''});api('/v1/jobs').then(d=>{jobs.innerHTML=row(['id','name','type',"   \
    "'np','state','attempt','progress','reason'],1)+d.jobs.map(j=>row(["         \
    "'<a href=# onclick=show('+j.id+')>'+j.id+'</a>',esc(j.name),j.type,j.np,'<span class='+"     \
    "j.state+'>'+j.state+'</span>',j.attempt,esc(j.progress?JSON.stringify(j.progress):''),"      \
    "esc(j.reason)])).join('')})}go();setInterval(go,2000)</script></body></html>"

#endif
