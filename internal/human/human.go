// Package human formats quantities for people to read. It imports nothing
// of the module, so every package may use it (driver, results, server and
// the workloads print sizes the same way).
package human

import (
	"slices"
	"strconv"
	"strings"
)

// Bytes formats a byte count in binary units: 512 B, 7.0 KiB, 1.5 GiB.
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return strconv.FormatFloat(float64(n)/float64(div), 'f', 1, 64) + " " + string("KMGTPE"[exp]) + "iB"
}

// LastLines are the last n non-empty lines of s, trimmed and joined with
// " | ": the end of a command's output in a one-line message.
func LastLines(s string, n int) string {
	var out []string
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			out = append(out, l)
		}
	}
	slices.Reverse(out)
	return strings.Join(out, " | ")
}
