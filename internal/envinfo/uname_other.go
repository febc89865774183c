//go:build !linux

package envinfo

import "errors"

// uname is only implemented on Linux, the platform tunebench measures on.
func uname() (release, version string, err error) {
	return "", "", errors.New("uname: not supported on this platform")
}
