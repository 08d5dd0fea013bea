//go:build !linux

package main

import "os/exec"

// stopWithParent does nothing where the kernel cannot signal a child when
// its parent dies: the nodes of a cluster up killed with SIGKILL run on
// until stopped by hand.
func stopWithParent(c *exec.Cmd) {}
