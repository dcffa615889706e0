// The film strip page of a training run (gradviz/stepper/filmstrip.py inlines the bundle).
import "../src/filmstrip.js";
