//go:build windows

package layout

import "errors"

// statNumbers: Windows has no device numbers (storage layouts need Linux).
func statNumbers(string) (dev, rdev uint64, err error) {
	return 0, 0, errors.New("storage layouts need Linux")
}
