package dev.locker.cli;

/** The CLI's names of keys and columns: {@link dev.locker.api.LockNames}, the notation every tool shares. */
final class LockNames {

    private LockNames() {
    }

    /** See {@link dev.locker.api.LockNames#parse}. */
    static byte[] parse(String arg, String what) {
        return dev.locker.api.LockNames.parse(arg, what);
    }

    /** See {@link dev.locker.api.LockNames#format}. */
    static String format(byte[] bytes) {
        return dev.locker.api.LockNames.format(bytes);
    }
}
