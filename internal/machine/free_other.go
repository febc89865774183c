//go:build !linux && !darwin

package machine

// FreeBytes is not known here.
func FreeBytes(string) (int64, bool) { return 0, false }
