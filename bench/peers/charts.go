package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

var palette = []color.Color{
	color.RGBA{31, 119, 180, 255}, color.RGBA{255, 127, 14, 255}, color.RGBA{44, 160, 44, 255},
	color.RGBA{214, 39, 40, 255}, color.RGBA{148, 103, 189, 255}, color.RGBA{140, 86, 75, 255},
	color.RGBA{227, 119, 194, 255}, color.RGBA{127, 127, 127, 255},
}

// chartCap is the largest ratio drawn; taller bars are cut at it (the table
// has the figure), so one outlier does not flatten every other bar.
const chartCap = 3.0

// writeCharts draws one grouped bar chart per table: each group is a column
// of the table, each bar an engine's median as a ratio to strata's (strata =
// 1; a missing bar is n/a).
func (r *report) writeCharts() error {
	if err := os.MkdirAll(r.cfg.charts, 0o755); err != nil {
		return err
	}
	if r.cfg.storage {
		cols := storageColumns()
		var names []string
		for _, c := range cols {
			names = append(names, c.title)
		}
		for _, size := range r.cfg.sizes {
			var series []barSeries
			for _, e := range engines() {
				if !wanted(r.cfg, e.Name()) {
					continue
				}
				vals := make(plotter.Values, len(cols))
				for i, c := range cols {
					if ref := c.get(r, c.ref(e.Name()), size).median(); ref > 0 {
						vals[i] = c.get(r, e.Name(), size).median() / ref
					}
				}
				series = append(series, barSeries{e.Name(), vals})
			}
			title := fmt.Sprintf("Storage, %d-byte records: records/s as a ratio to strata (higher is better)", size)
			if err := drawBars(filepath.Join(r.cfg.charts, fmt.Sprintf("storage-%d.png", size)), title, names, series); err != nil {
				return err
			}
		}
	}
	if r.cfg.protocol {
		for _, size := range r.cfg.sizes {
			var names []string
			for _, pol := range protoPolicies {
				for _, f := range protoFigures() {
					names = append(names, fmt.Sprintf("%s, %s", f.name, pol))
				}
			}
			var series []barSeries
			for _, e := range protoEngines {
				if !wanted(r.cfg, e) {
					continue
				}
				var vals plotter.Values
				for _, pol := range protoPolicies {
					ref, s := r.protocol[protoKey{"strata", size, pol}], r.protocol[protoKey{e, size, pol}]
					for _, f := range protoFigures() {
						v := 0.0
						if ref != nil && s != nil && f.get(ref).median() > 0 && f.get(s).median() > 0 {
							v = f.get(s).median() / f.get(ref).median()
						}
						vals = append(vals, v)
					}
				}
				series = append(series, barSeries{e, vals})
			}
			title := fmt.Sprintf("Protocol, %d-byte records: ratio to strata (throughput: higher is better; latency: lower is better)", size)
			if err := drawBars(filepath.Join(r.cfg.charts, fmt.Sprintf("protocol-%d.png", size)), title, names, series); err != nil {
				return err
			}
		}
	}
	return nil
}

type barSeries struct {
	name string
	vals plotter.Values
}

func drawBars(path, title string, groups []string, series []barSeries) error {
	p := plot.New()
	top, clipped := 0.0, false
	for _, s := range series {
		for i, v := range s.vals {
			if v > chartCap {
				s.vals[i], clipped = chartCap, true
			}
			top = max(top, s.vals[i])
		}
	}
	if clipped {
		title += fmt.Sprintf("; bars cut at %.0f×", chartCap)
	}
	p.Title.Text = title
	p.Y.Label.Text = "ratio to strata (strata = 1)"
	p.Legend.Top = true
	w := vg.Points(14)
	for i, s := range series {
		b, err := plotter.NewBarChart(s.vals, w)
		if err != nil {
			return err
		}
		b.LineStyle.Width = vg.Length(0)
		b.Color = palette[i%len(palette)]
		b.Offset = w * vg.Length(float64(i)-float64(len(series)-1)/2)
		p.Add(b)
		p.Legend.Add(s.name, b)
	}
	one := plotter.NewFunction(func(float64) float64 { return 1 })
	one.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	one.Color = color.Gray{Y: 90}
	p.Add(one)
	p.NominalX(groups...)
	p.Y.Min = 0
	p.Y.Max = max(top, 1) * 1.4 // room for the legend above the bars
	return p.Save(vg.Length(len(groups))*vg.Points(float64(len(series))*14+40)+vg.Inch, 5*vg.Inch, path)
}
