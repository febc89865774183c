//go:build !linux

package system

// deviceNumber is Linux-only (the samplers read /proc and /sys).
func deviceNumber(string) (string, bool) { return "", false }
