//! SideFX Labs "Vertex Animation Textures" (Houdini) bakes: import.
