// Package childproc runs a server as a child of the host and watches it
// from outside: its process attributes (a process group of its own, and
// on Linux a SIGKILL when the host dies), the guard process that kills the
// group if the host dies without stopping it (Guard), the child subreaper
// that finds what the server left behind (BecomeSubreaper, KillOrphans,
// Descendants, Linux only), and what /proc or sysctl says of the running
// process: its executable and command line (Observe) and the image an
// exec in place would change (ReadImage, ImageChange).
//
// Nothing here knows of epochs or grants; package host decides what a
// change means.
package childproc
