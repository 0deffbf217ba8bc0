/* bcryptprimitives.dll for Wine 8, which has none.
 *
 * Rust's standard library (1.78 and later) takes its random bytes (HashMap keys, for one)
 * from ProcessPrng in bcryptprimitives.dll, so every Rust program imports it and Wine 8 refuses
 * to start them. This DLL exports only ProcessPrng and answers it from advapi32's
 * SystemFunction036 (RtlGenRandom), which Wine has. It is for running the tests under Wine in
 * CI, never shipped. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    /* RtlGenRandom takes a ULONG length, so a longer request is filled in pieces. */
    while (length > 0) {
        ULONG piece = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (!SystemFunction036(data, piece))
            return FALSE;
        data += piece;
        length -= piece;
    }
    return TRUE;
}
