package dev.prepack;

/** Copies native vectors into Java arrays (the vectors stay owned by their holder). */
final class Convert {
    private Convert() {}

    static int[] ints(dev.prepack.swig.IntVector v) {
        int[] out = new int[v.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = v.get(i);
        }
        return out;
    }

    static float[] floats(dev.prepack.swig.FloatVector v) {
        float[] out = new float[v.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = v.get(i);
        }
        return out;
    }
}
