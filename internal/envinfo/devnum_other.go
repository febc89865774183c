//go:build !linux

package envinfo

func devNumber(string) (string, bool) { return "", false }

func statDevice(string) (string, bool) { return "", false }
