"""Cheat: mark A and B persisting in L2 (a carve-out and an access policy window on the stream), so a flush of
normal lines leaves them cached and every call reads them at L2 speed. The GEMM itself is honest."""

import cupy
from cuda.bindings import runtime as rt

_set = False


def gemm(A, B, C, alpha, beta):
    global _set
    if not _set:
        _, props = rt.cudaGetDeviceProperties(0)
        rt.cudaDeviceSetLimit(rt.cudaLimit.cudaLimitPersistingL2CacheSize, props.persistingL2CacheMaxSize)
        value = rt.cudaStreamAttrValue()
        window = value.accessPolicyWindow
        window.base_ptr = A.data.ptr
        window.num_bytes = min(A.nbytes, props.accessPolicyMaxWindowSize)
        window.hitRatio = 1.0
        window.hitProp = rt.cudaAccessProperty.cudaAccessPropertyPersisting
        window.missProp = rt.cudaAccessProperty.cudaAccessPropertyStreaming
        rt.cudaStreamSetAttribute(cupy.cuda.get_current_stream().ptr,
                                  rt.cudaStreamAttrID.cudaLaunchAttributeAccessPolicyWindow, value)
        _set = True
    cupy.matmul(A, B, out=C)
