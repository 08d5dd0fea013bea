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
	// Maps, drawn after the charts, show a run node by node.
	Maps []Map `json:"maps,omitempty"`
}

// Map is a run's nodes on a plane: each node at its true place and at the
// place the run estimated for it, a line between the two, the estimate
// coloured by the node's error (green for none, red for MaxError or more).
type Map struct {
	Title string `json:"title"`
	// Unit names the plane's coordinates ("ms").
	Unit string `json:"unit"`
	// ErrorName says what a node's error is ("median relative error of
	// its RTTs").
	ErrorName string `json:"error_name"`
	// MaxError is the error drawn reddest; 0: the largest node's.
	MaxError float64   `json:"max_error,omitempty"`
	Note     string    `json:"note,omitempty"`
	Nodes    []MapNode `json:"nodes"`
}

// MapNode is one node of a Map.
type MapNode struct {
	ID    int        `json:"id"`
	Truth [2]float64 `json:"truth"`
	// Estimate is where the run put the node, in the truth's frame; nil
	// if it makes no estimate of it.
	Estimate *[2]float64 `json:"estimate,omitempty"`
	Error    float64     `json:"error"`
	// Detail is more for the tooltip ("height 3.1 ms, estimated 2.7 ms").
	Detail string `json:"detail,omitempty"`
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
.map svg { background: #fff; }
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
