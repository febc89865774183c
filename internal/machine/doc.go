// Package machine is the one room where tunebench reads what a Linux
// machine's /proc and /sys say: the mount table (through
// github.com/moby/sys/mountinfo), free space, block devices, processes'
// /proc/PID files, and the system-wide counters the samplers read
// (/proc/stat, meminfo, diskstats, net/dev, pressure). Its parsers take a
// file's contents, so the same code reads a file of this machine and one
// fetched from a database server's host (through SQL); the functions that
// read this machine's files are named Read... or say so.
package machine
