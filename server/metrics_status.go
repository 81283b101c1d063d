package server

import (
	"fmt"
	"html/template"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/stratalog/strata/internal/metrics"
)

// The status page (GET / on strata.metrics.listener): server-rendered HTML,
// inline CSS and SVG, no script and no external asset, so it works offline
// and on a phone. It shows the brokers, the controller, every partition
// with its leader, ISR and size, the under-replicated and offline ones, the
// groups with their lag, and charts of the last minutes' message rate, byte
// rates and produce p99 (the registry's history, a sample every 5 s).

type statusPage struct {
	State        brokerState
	Now          string
	Topics       int
	UnderRepl    []partStatus
	Offline      []partStatus
	Charts       []chart
	TotalSize    int64
	HandlerIdle  float64
	MetricsPath  string
	PartitionsOf map[string]int
}

type chart struct {
	Title, Unit string
	Last        string
	Points      string // SVG polyline points in a 300x60 box
	Empty       bool
}

var statusTmpl = template.Must(template.New("status").Funcs(template.FuncMap{
	"ids":   func(v []int32) string { return strings.Trim(fmt.Sprint(v), "[]") },
	"bytes": humanBytes,
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>strata broker {{.State.NodeID}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:0 auto;max-width:60rem;padding:0.8rem;color:#222;background:#fafafa}
h1{font-size:1.3rem;margin:0.2rem 0}h2{font-size:1.05rem;margin:1.2rem 0 0.4rem}
table{border-collapse:collapse;width:100%;font-size:0.9rem}
th,td{text-align:left;padding:0.25rem 0.5rem;border-bottom:1px solid #ddd}
.wrap{overflow-x:auto}.bad{color:#b00020;font-weight:600}.ok{color:#1b5e20}
.charts{display:flex;flex-wrap:wrap;gap:0.8rem}.chart{flex:1 1 16rem;background:#fff;border:1px solid #ddd;padding:0.5rem}
svg{width:100%;height:4rem}polyline{fill:none;stroke:#1565c0;stroke-width:1.5}
.muted{color:#777;font-size:0.85rem}
</style></head><body>
<h1>strata broker {{.State.NodeID}}</h1>
<p class="muted">cluster {{.State.ClusterID}} · {{.Now}} · <a href="{{.MetricsPath}}">/metrics</a></p>
<h2>Cluster</h2>
<table><tr><th>brokers</th><td id="brokers">{{ids .State.Brokers}}</td></tr>
<tr><th>controller</th><td id="controller">{{if ge .State.Controller 0}}{{.State.Controller}}{{else}}<span class="bad">none</span>{{end}}{{if .State.IsController}} (this broker){{end}}</td></tr>
<tr><th>topics / partitions</th><td>{{.Topics}} / {{len .State.Partitions}}</td></tr>
<tr><th>under-replicated</th><td id="under-replicated" class="{{if .UnderRepl}}bad{{else}}ok{{end}}">{{len .UnderRepl}}</td></tr>
<tr><th>offline</th><td id="offline" class="{{if .Offline}}bad{{else}}ok{{end}}">{{len .Offline}}</td></tr>
<tr><th>stored here</th><td>{{bytes .TotalSize}}</td></tr>
<tr><th>handler idle</th><td>{{printf "%.0f%%" .HandlerIdle}}</td></tr></table>
<h2>Last minutes</h2>
<div class="charts">{{range .Charts}}<div class="chart"><div>{{.Title}} <b>{{.Last}}</b> {{.Unit}}</div>
{{if .Empty}}<p class="muted">no samples yet</p>{{else}}<svg viewBox="0 0 300 60" preserveAspectRatio="none" role="img" aria-label="{{.Title}}"><polyline points="{{.Points}}"/></svg>{{end}}</div>{{end}}</div>
<h2>Partitions</h2>
<div class="wrap"><table id="partitions"><tr><th>topic</th><th>partition</th><th>leader</th><th>replicas</th><th>ISR</th><th>size</th><th>offsets</th></tr>
{{range .State.Partitions}}<tr><td>{{.Topic}}</td><td>{{.Partition}}</td><td>{{if ge .Leader 0}}{{.Leader}}{{else}}<span class="bad">none</span>{{end}}</td><td>{{ids .Replicas}}</td>
<td{{if .UnderReplicated}} class="bad"{{end}}>{{ids .ISR}}</td><td>{{if .Local}}{{bytes .Size}}{{end}}</td><td>{{if .Local}}{{.StartOffset}}–{{.EndOff}}{{end}}</td></tr>
{{end}}</table></div>
<h2>Consumer groups</h2>
{{if not .State.Groups}}<p class="muted">none</p>{{end}}
{{range .State.Groups}}<h3 style="font-size:0.95rem">{{.ID}} <span class="muted">{{.State}}, {{.Members}} members</span></h3>
<div class="wrap"><table><tr><th>topic</th><th>partition</th><th>committed</th><th>lag</th></tr>
{{range .Parts}}<tr><td>{{.Topic}}</td><td>{{.Partition}}</td><td>{{.Committed}}</td><td>{{if ge .Lag 0}}{{.Lag}}{{else}}<span class="muted">unknown</span>{{end}}</td></tr>
{{end}}</table></div>{{end}}
</body></html>
`))

// serveStatus renders the status page.
func (s *Server) serveStatus(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	st := s.state()
	pg := statusPage{State: st, Now: time.Now().UTC().Format(time.RFC3339), MetricsPath: "/metrics"}
	topics := map[string]bool{}
	for _, p := range st.Partitions {
		topics[p.Topic] = true
		if p.UnderReplicated {
			pg.UnderRepl = append(pg.UnderRepl, p)
		}
		if p.Offline {
			pg.Offline = append(pg.Offline, p)
		}
		pg.TotalSize += p.Size
	}
	pg.Topics = len(topics)
	var hist []metrics.Sample
	if s.met != nil {
		hist = s.met.History()
		pg.HandlerIdle = 100 * s.met.HandlerIdleRatio()
	}
	pg.Charts = []chart{
		makeChart("messages in", "/s", hist, func(x metrics.Sample) float64 { return x.MsgRate }),
		makeChart("bytes in", "kB/s", hist, func(x metrics.Sample) float64 { return x.BytesInRate / 1e3 }),
		makeChart("bytes out", "kB/s", hist, func(x metrics.Sample) float64 { return x.BytesOutRate / 1e3 }),
		makeChart("produce p99", "ms", hist, func(x metrics.Sample) float64 { return x.ProduceP99Ms }),
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := statusTmpl.Execute(w, pg); err != nil {
		s.log.Warn("status page", "error", err)
	}
}

// makeChart draws a series as polyline points scaled to its maximum.
func makeChart(title, unit string, hist []metrics.Sample, f func(metrics.Sample) float64) chart {
	c := chart{Title: title, Unit: unit, Empty: len(hist) == 0, Last: "–"}
	if c.Empty {
		return c
	}
	top := 0.0
	for _, x := range hist {
		if v := f(x); !math.IsNaN(v) {
			top = max(top, v)
		}
	}
	if top == 0 {
		top = 1
	}
	var b strings.Builder
	n := len(hist)
	for i, x := range hist {
		v := f(x)
		if math.IsNaN(v) {
			v = 0
		}
		px := 300.0
		if n > 1 {
			px = 300 * float64(i) / float64(n-1)
		}
		fmt.Fprintf(&b, "%.1f,%.1f ", px, 58-56*v/top)
	}
	c.Points = strings.TrimSpace(b.String())
	if v := f(hist[n-1]); !math.IsNaN(v) {
		switch {
		case v >= 100:
			c.Last = fmt.Sprintf("%.0f", v)
		case v >= 1:
			c.Last = fmt.Sprintf("%.2f", v)
		default:
			c.Last = fmt.Sprintf("%.3f", v)
		}
	}
	return c
}

func humanBytes(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}
