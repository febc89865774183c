package cli

import (
	"fmt"
	"strings"
	"time"
)

// loadBar renders load progress: an updating bar on a terminal, otherwise a
// plain line every few seconds (logs stay readable).
type loadBar struct {
	s        *State
	last     time.Time
	lastLine string
	every    time.Duration
}

func newLoadBar(s *State) *loadBar {
	every := 3 * time.Second
	if s.StderrTTY {
		every = 200 * time.Millisecond
	}
	return &loadBar{s: s, every: every}
}

func (b *loadBar) update(phase string, rows, total int64, elapsed time.Duration, final bool) {
	if !b.due(final) {
		return
	}
	frac := 0.0
	if total > 0 {
		frac = float64(rows) / float64(total)
	}
	rate := rowRate(rows, elapsed)
	eta := "-"
	if rate > 0 && rows < total && phase == "generate" {
		eta = (time.Duration(float64(total-rows)/rate) * time.Second / time.Second).Round(time.Second).String()
	}
	b.render(phase, rows, frac, rate, elapsed, eta, final)
}

// due reports whether a line is due now (always for the final one).
func (b *loadBar) due(final bool) bool {
	now := time.Now()
	if !final && now.Sub(b.last) < b.every {
		return false
	}
	b.last = now
	return true
}

func rowRate(rows int64, elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	return float64(rows) / elapsed.Seconds()
}

// render draws the bar (terminal) or prints the line if it changed (logs).
func (b *loadBar) render(what string, rows int64, frac, rate float64, elapsed time.Duration, eta string, final bool) {
	const width = 30
	filled := int(frac * width)
	bar := strings.Repeat("#", filled) + strings.Repeat(".", width-filled)
	line := fmt.Sprintf("[%s] %5.1f%% %s rows, %s rows/s, %s elapsed, ETA %s  (%s)",
		bar, 100*frac, human(float64(rows)), human(rate), elapsed.Round(100*time.Millisecond), eta, what)
	if b.s.StderrTTY {
		b.s.eprintf("\r%-110s", line)
		if final {
			b.s.eprintf("\n")
		}
		return
	}
	if line != b.lastLine {
		b.s.eprintf("%s\n", line)
		b.lastLine = line
	}
}

// human formats counts with k/M/G suffixes.
func human(v float64) string {
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

// updateFrac renders a load whose progress the caller weighs itself (tpcc:
// rows while data is copied, then key and ANALYZE steps): frac in [0, 1],
// what names the phase, eta < 0 means unknown. The rate is rows per second.
func (b *loadBar) updateFrac(what string, rows int64, frac float64, elapsed, eta time.Duration, final bool) {
	if !b.due(final) {
		return
	}
	etaText := "-"
	if eta >= 0 && !final {
		etaText = eta.Round(time.Second).String()
	}
	b.render(what, rows, max(0, min(frac, 1)), rowRate(rows, elapsed), elapsed, etaText, final)
}
