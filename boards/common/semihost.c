/* Arm semihosting calls (bkpt 0xab, operation in r0, argument block in r1) and the number formatter. */
#include "semihost.h"

#define SYS_OPEN 0x01u
#define SYS_CLOSE 0x02u
#define SYS_WRITE0 0x04u
#define SYS_WRITE 0x05u
#define SYS_READ 0x06u
#define SYS_FLEN 0x0Cu
#define SYS_EXIT 0x18u

#define ADP_STOPPED_APPLICATION_EXIT 0x20026u
#define ADP_STOPPED_RUN_TIME_ERROR_UNKNOWN 0x20023u

static uint32_t semihost_call(uint32_t op, const void *arg)
{
    register uint32_t r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

static uint32_t length(const char *s)
{
    uint32_t n = 0;
    while (s[n] != '\0') {
        ++n;
    }
    return n;
}

int32_t mcu_sh_open(const char *path, uint32_t mode)
{
    const uint32_t args[3] = {(uint32_t)(uintptr_t)path, mode, length(path)};
    return (int32_t)semihost_call(SYS_OPEN, args);
}

void mcu_sh_close(int32_t handle)
{
    const uint32_t args[1] = {(uint32_t)handle};
    (void)semihost_call(SYS_CLOSE, args);
}

int32_t mcu_sh_flen(int32_t handle)
{
    const uint32_t args[1] = {(uint32_t)handle};
    return (int32_t)semihost_call(SYS_FLEN, args);
}

/* SYS_READ and SYS_WRITE return the number of bytes NOT transferred. */
uint32_t mcu_sh_read(int32_t handle, void *buf, uint32_t len)
{
    const uint32_t args[3] = {(uint32_t)handle, (uint32_t)(uintptr_t)buf, len};
    uint32_t left = semihost_call(SYS_READ, args);
    return left > len ? 0u : len - left;
}

uint32_t mcu_sh_write(int32_t handle, const void *buf, uint32_t len)
{
    const uint32_t args[3] = {(uint32_t)handle, (uint32_t)(uintptr_t)buf, len};
    uint32_t left = semihost_call(SYS_WRITE, args);
    return left > len ? 0u : len - left;
}

void mcu_sh_puts(const char *s)
{
    (void)semihost_call(SYS_WRITE0, s);
}

void mcu_sh_exit(int success)
{
    /* On AArch32 the SYS_EXIT argument is the reason code itself, not a pointer to a block. */
    uint32_t reason = success ? ADP_STOPPED_APPLICATION_EXIT : ADP_STOPPED_RUN_TIME_ERROR_UNKNOWN;
    (void)semihost_call(SYS_EXIT, (const void *)(uintptr_t)reason);
    for (;;) {
    }
}

char *mcu_fmt_str(char *dst, const char *s)
{
    while (*s != '\0') {
        *dst++ = *s++;
    }
    *dst = '\0';
    return dst;
}

char *mcu_fmt_u64(char *dst, uint64_t v)
{
    char digits[20];
    uint32_t n = 0;
    do {
        digits[n++] = (char)('0' + (uint32_t)(v % 10u));
        v /= 10u;
    } while (v != 0u);
    while (n > 0u) {
        *dst++ = digits[--n];
    }
    *dst = '\0';
    return dst;
}

char *mcu_fmt_i32(char *dst, int32_t v)
{
    uint32_t magnitude = (uint32_t)v;
    if (v < 0) {
        *dst++ = '-';
        magnitude = 0u - magnitude;
    }
    return mcu_fmt_u64(dst, magnitude);
}

char *mcu_fmt_hex32(char *dst, uint32_t v)
{
    static const char hex[] = "0123456789abcdef";
    *dst++ = '0';
    *dst++ = 'x';
    for (int shift = 28; shift >= 0; shift -= 4) {
        *dst++ = hex[(v >> shift) & 0xFu];
    }
    *dst = '\0';
    return dst;
}
