//go:build linux

package envinfo

import "golang.org/x/sys/unix"

// uname returns the kernel release and version (uname -r, uname -v).
func uname() (release, version string, err error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "", "", err
	}
	return unix.ByteSliceToString(u.Release[:]), unix.ByteSliceToString(u.Version[:]), nil
}
