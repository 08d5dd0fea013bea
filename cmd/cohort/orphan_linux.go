package main

import (
	"os/exec"
	"syscall"
)

// stopWithParent has the kernel send c SIGTERM when the process that
// started it dies (PR_SET_PDEATHSIG): the nodes of a cluster up killed
// with SIGKILL stop instead of running on, orphaned, holding their ports
// and data directories.
func stopWithParent(c *exec.Cmd) {
	if c.SysProcAttr == nil {
		c.SysProcAttr = &syscall.SysProcAttr{}
	}
	c.SysProcAttr.Pdeathsig = syscall.SIGTERM
}
