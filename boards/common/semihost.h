/* Minimal Arm semihosting (files and console on the host, exit codes) and a tiny number formatter: no newlib stdio. */
#ifndef MCU_SEMIHOST_H
#define MCU_SEMIHOST_H

#include <stdint.h>

/* Open modes (the ISO C fopen mode index of the semihosting spec). */
#define MCU_SH_MODE_RB 1u /* "rb" */
#define MCU_SH_MODE_WB 5u /* "wb" */

/* Returns a handle >= 0, or -1 if the host could not open the file (path is relative to QEMU's cwd). */
int32_t mcu_sh_open(const char *path, uint32_t mode);
void mcu_sh_close(int32_t handle);
/* Length of an open file in bytes, or -1. */
int32_t mcu_sh_flen(int32_t handle);
/* Both return the number of bytes actually transferred. */
uint32_t mcu_sh_read(int32_t handle, void *buf, uint32_t len);
uint32_t mcu_sh_write(int32_t handle, const void *buf, uint32_t len);
/* Writes a NUL-terminated string to the host console (QEMU's stdout). */
void mcu_sh_puts(const char *s);
/* Ends the emulation: QEMU exits with status 0 if success, else 1. */
void mcu_sh_exit(int success) __attribute__((noreturn));

/* Formatters: write at dst, NUL-terminate, return a pointer to the NUL so calls chain. */
char *mcu_fmt_str(char *dst, const char *s);
char *mcu_fmt_u64(char *dst, uint64_t v);
char *mcu_fmt_i32(char *dst, int32_t v);
char *mcu_fmt_hex32(char *dst, uint32_t v); /* "0x" and exactly 8 lowercase digits */

#endif /* MCU_SEMIHOST_H */
