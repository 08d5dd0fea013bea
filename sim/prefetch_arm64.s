#include "textflag.h"

// func prefetch(p unsafe.Pointer)
TEXT ·prefetch(SB), NOSPLIT|NOFRAME, $0-8
	MOVD p+0(FP), R0
	PRFM (R0), PLDL1KEEP
	RET

// func prefetchLines(p unsafe.Pointer, n int)
TEXT ·prefetchLines(SB), NOSPLIT|NOFRAME, $0-16
	MOVD p+0(FP), R0
	MOVD n+8(FP), R1
	CMP $0, R1
	BLE done
loop:
	PRFM (R0), PLDL1KEEP
	ADD $64, R0
	SUBS $1, R1
	BNE loop
done:
	RET

// func prefetch3(a, b, c unsafe.Pointer)
TEXT ·prefetch3(SB), NOSPLIT|NOFRAME, $0-24
	MOVD a+0(FP), R0
	MOVD b+8(FP), R1
	MOVD c+16(FP), R2
	PRFM (R0), PLDL1KEEP
	PRFM (R1), PLDL1KEEP
	PRFM (R2), PLDL1KEEP
	RET
