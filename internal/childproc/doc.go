// Package childproc runs a server as a child of the host and watches it
// from outside: its process attributes (a process group of its own, and
// on Linux a SIGKILL when the host dies), the guard process that kills the
// groups if the host dies without stopping them (Guard, one per host), the
// child subreaper that finds what the server left behind (BecomeSubreaper,
// KillOrphans, Descendants, Linux only: from the kernel's lists of each
// process's children, so that their cost is the host's tree, not the
// machine's process table), and what /proc or sysctl says of the running
// process: its executable and command line (Observe) and the image an
// exec in place would change (ReadImage, ImageChange).
//
// Nothing here knows of epochs or grants; package host decides what a
// change means.
package childproc
