// Package human formats quantities for people to read. It imports nothing
// of the module, so every package may use it (driver, results, server and
// the workloads print sizes the same way).
package human

import "strconv"

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
