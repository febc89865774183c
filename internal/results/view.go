package results

import "fmt"

// A workload presents its results through these types: blocks of text and
// tables for the terminal (the CLI prints them), sections of tables and
// charts for the HTML report (the report draws them). Neither the CLI nor
// the report knows a workload's fields.

// Block is one piece of a terminal view: a line of text, or a table.
type Block struct {
	Text  string // a line (without its newline); ignored when Table is set
	Table *Table
}

// Line is a text block.
func Line(s string) Block { return Block{Text: s} }

// TableBlock is a table block.
func TableBlock(t *Table) Block { return Block{Table: t} }

// Table is a table with a header row.
type Table struct {
	Name    string // a caption (report), "" for none
	Columns []string
	Rows    [][]string
	// Left is the number of leading text columns (left-aligned in the
	// report); the terminal right-aligns every column, as before.
	Left int
}

// Row adds a row.
func (t *Table) Row(cells ...string) { t.Rows = append(t.Rows, cells) }

// Field is a labelled value.
type Field struct{ K, V string }

// Section is a workload's part of the HTML report, across its runs.
type Section struct {
	ID     string // HTML anchor
	Title  string
	Intro  string
	Bars   []BarChart // across runs
	Tables []Table    // across runs
	Runs   []RunView  // one per run
}

// RunView is one run in a section.
type RunView struct {
	RunID  int64
	Fields []Field
	Tables []Table
	Charts []SeriesChart // drawn from the run's stored series
	Note   string
}

// BarChart is a horizontal bar chart: one group of bars per row, one bar
// per column.
type BarChart struct {
	Title   string
	Unit    string
	Columns []string
	Rows    []Bar
	// ColorByRow colours each row's bars by row (one column only).
	ColorByRow bool
	// Log draws the values on a logarithmic axis, as points.
	Log bool
}

// Bar is one row of a bar chart; NaN values are left out.
type Bar struct {
	Label  string
	Values []float64
}

// SeriesChart draws stored series of one run against time.
type SeriesChart struct {
	Title  string
	YLabel string
	Series []SeriesRef
}

// SeriesRef names a stored series and its legend label.
type SeriesRef struct{ Name, Label string }

// Human formats a count with k/M/G suffixes (rows, rates).
func Human(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.2fG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

// StatusLines say why a run's status is not ok, one line per reason
// ("status errors: outages covered ..."); none for an ok run. Errors
// within --max-errors-pct are said as what they are, not as the status's
// reason.
func StatusLines(s *Summary) []Block {
	var out []Block
	for _, r := range s.StatusReasons {
		if r.Code == ReasonErrors {
			out = append(out, Line("errors: "+r.Detail))
			continue
		}
		out = append(out, Line(fmt.Sprintf("status %s: %s", s.Status, r.Detail)))
	}
	return out
}
