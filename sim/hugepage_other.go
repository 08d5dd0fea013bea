//go:build !linux

package sim

// adviseHuge does nothing where the platform offers no huge-page advice.
func adviseHuge[T any]([]T) {}
