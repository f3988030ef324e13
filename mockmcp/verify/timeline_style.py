"""The HTML timeline's inline CSS and script, and the lifelines drawn as row backgrounds.

The geometry, in one place: every row is a grid of the same columns: the time,
the client (its lifeline in the middle), the labels (``1fr``: the diagram
takes the page's width, and every label sits here, between the client's
lifeline and the first mock's, so no label ever crosses a lifeline), then one
fixed-width column per mock process, its lifeline in the middle. An arrow is
a line from the client's middle to its lane's middle, drawn at ``--mid``
pixels from the row's top, under its label; a lane's marks (started, exited)
sit on the lifeline at the same height.

Lifelines are backgrounds of the rows (one gradient per lifeline, no element
per lane per row: 10,000 rows stay cheap). A row's class names the set of
lifelines it draws (``lifeline_css`` writes one rule per set seen): a
lifeline starts at its process's first record and ends at its exit.
"""

from __future__ import annotations

GREY = "linear-gradient(#b8bec8,#b8bec8)"
MID = 22  # px from a row's top to its arrow, marks, and the end of an ending lifeline


def lifeline_css(sets: dict[tuple[tuple[int, str], ...], str], lanes: int) -> str:
    """One rule per set of lifelines a row draws: the client's always, a lane's in full, from the
    middle down (its first row) or down to the middle (where its process exited)."""
    rules = []
    for drawn, name in sets.items():
        images = [GREY]
        sizes = ["1px 100%"]
        places = ["left calc(var(--tw) + var(--cw) / 2) top 0"]
        for index, how in drawn:
            images.append(GREY)
            right = f"right calc({lanes - index - 0.5} * var(--lw))"
            if how == "full":
                sizes.append("1px 100%")
                places.append(f"{right} top 0")
            elif how == "from":
                sizes.append(f"1px calc(100% - {MID}px)")
                places.append(f"{right} bottom 0")
            else:
                sizes.append(f"1px {MID}px")
                places.append(f"{right} top 0")
        rules.append(f".{name}{{background-image:{','.join(images)};background-size:{','.join(sizes)};background-position:{','.join(places)}}}")
    return "\n".join(rules)


CSS = f"""
:root{{--tw:5.5em;--cw:8em;--lw:13em;--bg:#fff;--fg:#1d2330;--muted:#6b7280;--in:#0b63c5;--out:#13804a;--bad:#c0262d;--fault:#9a5b00}}
body{{font:13px/1.35 system-ui,sans-serif;margin:0;color:var(--fg);background:var(--bg)}}
header{{padding:10px 16px;border-bottom:1px solid #d6dae1;background:#f6f7f9}}
h1{{font-size:17px;margin:0 0 4px}}h1 small{{font-weight:normal;color:var(--muted)}}
.summary,.legend{{margin:0;color:var(--muted)}}
.counts{{margin:4px 0 0;font-weight:600}}.counts .findings{{color:var(--out)}}.counts .findings.some{{color:var(--bad)}}
.counts .faults{{color:var(--fault)}}
.legend{{padding:0;list-style:none;margin-top:4px}}
.problems,.faultlist{{margin:6px 0 0;padding-left:18px;color:var(--bad)}}.problems a{{color:var(--bad)}}
.faultlist,.faultlist a{{color:var(--fault)}}
.timeline{{padding:0 16px 40px;min-width:calc(var(--tw) + var(--cw) + 18em + var(--lanes) * var(--lw))}}
.row{{display:grid;grid-template-columns:var(--tw) var(--cw) minmax(18em,1fr) repeat(var(--lanes),var(--lw));
 content-visibility:auto;contain-intrinsic-size:auto 30px;background-repeat:no-repeat;min-height:30px}}
.row>*{{grid-row:1}}
.t{{grid-column:1;color:var(--muted);font-variant-numeric:tabular-nums;padding:6px 8px 0 0;text-align:right;white-space:nowrap}}
#lanes{{position:sticky;top:0;z-index:2;background:var(--bg);border-bottom:1px solid #d6dae1;align-items:end}}
#lanes .t{{padding-bottom:6px}}
.lanehead{{font-weight:600;text-align:center;padding:6px 4px;min-width:0;overflow-wrap:anywhere}}
.lanehead span{{display:block;font-weight:normal;font-size:12px;color:var(--muted)}}
.lanehead.mock{{color:var(--out)}}.lanehead .ended{{color:var(--bad);font-weight:600}}
.arrow,.box{{grid-column:3;margin:2px .6em;min-width:0}}
summary{{cursor:pointer;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}}
summary::-webkit-details-marker{{display:none}}
.arrow>summary{{list-style:none;padding:2px 4px 4px}}
.line{{align-self:start;height:0;margin:{MID}px calc(var(--lw) / 2) 0 calc(var(--cw) / 2);border-top:2px solid currentColor;position:relative}}
.in{{color:var(--in)}}.out{{color:var(--out)}}
.in .line::after,.out .line::before{{content:"";position:absolute;top:-6px;border:5px solid transparent}}
.in .line::after{{right:-1px;border-left:9px solid currentColor;border-right:0}}
.out .line::before{{left:-1px;border-right:9px solid currentColor;border-left:0}}
.notification .line{{border-top-style:dashed}}
.bad,.error{{color:var(--bad)}}.bad .line{{border-top-style:dotted}}
.mark{{align-self:start;justify-self:center;margin-top:{MID - 5}px;width:10px;height:10px;border-radius:50%;background:var(--out)}}
.mark.exit{{margin-top:{MID - 7}px;width:14px;height:14px;border-radius:0;
 background:linear-gradient(45deg,transparent 40%,var(--bad) 40%,var(--bad) 60%,transparent 60%),linear-gradient(-45deg,transparent 40%,var(--bad) 40%,var(--bad) 60%,transparent 60%)}}
.mark.event{{background:#7c6bc4}}
.row[data-group]{{box-shadow:inset 4px 0 0 hsl(var(--g) 70% 50%);background-color:hsl(var(--g) 80% 96%)}}
.round{{font-size:11px;background:hsl(var(--g,40) 70% 45%);color:#fff;border-radius:8px;padding:0 6px;margin-left:6px}}
.rule,.pairlink,.spec{{font-size:11px;color:var(--muted);margin-left:8px}}
.tag{{font-size:11px;font-weight:600;color:var(--fault);border:1px solid currentColor;border-radius:8px;padding:0 6px;margin-left:8px}}
.box>summary{{padding:3px 8px;border-radius:4px;background:#f0ecfa;color:#4b3a88}}
.start .box>summary{{background:#e9f5ee;color:var(--out);font-weight:600}}
.fault .box>summary{{background:#fdf1dc;color:var(--fault);font-weight:600;border-left:4px solid var(--fault)}}
.exit .box>summary{{background:#fde8e8;color:var(--bad);border-left-color:var(--bad)}}
.finding .box>summary{{background:#fde8e8;color:var(--bad);font-weight:600;border-left:4px solid var(--bad)}}
pre{{margin:4px 0 8px;padding:8px;background:#f6f7f9;border:1px solid #e1e4e8;border-radius:4px;overflow:auto;max-height:24em;
 white-space:pre-wrap;word-break:break-all;color:var(--fg);font-size:12px}}
.hl{{outline:2px solid #f59e0b;outline-offset:-2px;background-color:#fff7e0}}
:target{{outline:2px solid var(--bad);outline-offset:-2px}}
"""

JS = """
(function(){
  var t=document.getElementById('timeline'),lit=[];
  t.addEventListener('click',function(ev){
    var row=ev.target.closest('.row');if(!row)return;
    lit.forEach(function(e){e.classList.remove('hl')});lit=[row];
    var p=row.getAttribute('data-pair');if(p){var o=document.getElementById(p);if(o)lit.push(o)}
    var g=row.getAttribute('data-group');if(g){lit=lit.concat([].slice.call(t.querySelectorAll('[data-group="'+g+'"]')))}
    lit.forEach(function(e){e.classList.add('hl')});
  });
})();
"""
