package report

import (
	_ "embed"
	"html/template"
	"io"
)

//go:embed report.html.tmpl
var pageTemplate string

var page = template.Must(template.New("report").Parse(pageTemplate))

// WriteHTML writes the report as one self-contained HTML page: styles inline,
// charts as inline SVG, no script, nothing fetched from the network.
func (r *Report) WriteHTML(w io.Writer) error {
	return page.Execute(w, r)
}
