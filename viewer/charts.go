package viewer

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
)

// Charts is a page of charts of a comparison (cohort compare): for each
// metric and case, the measured figure of every algorithm against the
// number of processes, beside the theory's figure where the sources give
// one.
type Charts struct {
	Title string `json:"title"`
	// Rows are the comparison's rows, as cohort compare --json prints
	// them.
	Rows []ChartRow `json:"rows"`
}

// ChartRow is one measured figure (lab.CompareRow's JSON).
type ChartRow struct {
	Algo     string   `json:"algo"`
	Nodes    int      `json:"nodes"`
	Case     string   `json:"case"`
	Metric   string   `json:"metric"`
	Measured *float64 `json:"measured"`
	Theory   *float64 `json:"theory"`
	Note     string   `json:"note,omitempty"`
	// X, if set, is where the figure goes across instead of Nodes (a
	// round, a noise level), and XLabel names that axis ("processes" if
	// empty); the values are spaced evenly, in order, whatever they are.
	X      *float64 `json:"x,omitempty"`
	XLabel string   `json:"x_label,omitempty"`
	// LogY draws the figure's chart on a logarithmic scale (for figures
	// that span decades; every one of the chart's figures must be > 0).
	LogY bool `json:"log_y,omitempty"`
}

//go:embed assets/charts.js
var chartsJS string

// RenderCharts returns the charts as one self-contained HTML page (the
// viewer's style, no network).
func RenderCharts(c *Charts) ([]byte, error) {
	if c.Rows == nil {
		c.Rows = []ChartRow{}
	}
	js, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("viewer: %w", err)
	}
	js = bytes.ReplaceAll(js, []byte("<"), []byte(`\u003c`))
	var title bytes.Buffer
	escapeText(&title, c.Title)
	page := `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{TITLE}} — Cohort charts</title>
<style>
{{CSS}}
body { display: block; overflow: auto; }
#charts { display: flex; flex-wrap: wrap; gap: 14px; padding: 12px; }
.chart { border: 1px solid #ddd; border-radius: 4px; padding: 6px 8px; background: #fff; }
.chart h3 { margin: 2px 0 4px; font-size: 13px; }
.chart .note { color: #777; font-size: 11px; max-width: 460px; }
</style>
</head>
<body>
<header id="bar"><strong id="title"></strong><span id="info"></span></header>
<div id="charts"></div>
<script type="application/json" id="cohort-data">{{DATA}}</script>
<script>
{{JS}}
</script>
</body>
</html>
`
	r := strings.NewReplacer("{{TITLE}}", title.String(), "{{CSS}}", pageCSS, "{{JS}}", chartsJS)
	head, tail, _ := strings.Cut(r.Replace(page), "{{DATA}}")
	return append(append([]byte(head), js...), tail...), nil
}
