//go:build !linux

package envinfo

func DevNumber(string) (string, bool) { return "", false }

func statDevice(string) (string, bool) { return "", false }
