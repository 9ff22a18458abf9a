//! The validation oracle the other vat-vulkan tests rely on: the headless context enables the Khronos
//! validation layer, and its debug messenger counts (a) an invalid call and (b) an object left alive
//! when the device is destroyed. A context used correctly reports nothing.

// Integration tests report failure by panicking; the deliberate misuse below needs raw Vulkan calls.
#![allow(clippy::unwrap_used)]
#![allow(unsafe_code)] // deliberate invalid Vulkan usage, to prove the messenger catches it

use ash::vk;
use vat_vulkan::Context;

fn context() -> Context {
    let ctx = Context::headless()
        .unwrap_or_else(|e| panic!("no Vulkan device: {e} (run `cargo xtask deps` as root for lavapipe)"));
    assert!(
        ctx.validation_enabled() && ctx.messenger_enabled(),
        "the Khronos validation layer is not installed (apt-get install vulkan-validationlayers)"
    );
    ctx
}

#[test]
fn a_clean_context_reports_nothing() {
    let ctx = context();
    let messages = ctx.messages();
    println!("device: {}", ctx.device_name());
    drop(ctx);
    assert_eq!((messages.errors(), messages.warnings()), (0, 0));
}

#[test]
fn the_messenger_counts_an_invalid_call() {
    let ctx = context();
    let messages = ctx.messages();
    let info = vk::BufferCreateInfo::default().size(0).usage(vk::BufferUsageFlags::STORAGE_BUFFER);
    // SAFETY: deliberately invalid (size 0, VUID-VkBufferCreateInfo-size-00912): the validation layer
    // reports it; lavapipe itself accepts it. The buffer, if any, is destroyed right away.
    unsafe {
        if let Ok(b) = ctx.device.create_buffer(&info, None) {
            ctx.device.destroy_buffer(b, None);
        }
    }
    assert!(messages.errors() > 0, "the size-0 buffer was not reported");
}

#[test]
fn the_messenger_counts_a_leaked_object_at_device_destruction() {
    let ctx = context();
    let messages = ctx.messages();
    let info = vk::BufferCreateInfo::default().size(64).usage(vk::BufferUsageFlags::STORAGE_BUFFER);
    // SAFETY: valid call; the buffer is deliberately never destroyed, which the layer reports when the
    // device is destroyed.
    let _leaked = unsafe { ctx.device.create_buffer(&info, None) }.unwrap();
    assert_eq!(messages.errors(), 0);
    drop(ctx);
    assert!(messages.errors() > 0, "the leaked buffer was not reported at device destruction");
}

/// Every vertex format (each is a `VERTEX_FORMAT` variant of the shader).
fn vat_tests_formats() -> [vat_core::format::encoding::VertexFormat; 6] {
    use vat_core::format::encoding::VertexFormat as F;
    [F::Packed64, F::Unorm16, F::F16, F::F32, F::Unorm8, F::Split8]
}

/// Every entry point of the shared WGSL, in every variant, becomes a `VkShaderModule` that the
/// validation layer (which runs the SPIR-V validator on each module) accepts.
#[test]
fn every_translated_entry_point_passes_the_validation_layer() {
    use vat_core::backend::pipeline::ImpostorViews;
    use vat_core::playback::Interpolation;
    use vat_vulkan::shader::{ShaderModule, ShaderVariant};
    let ctx = context();
    let messages = ctx.messages();
    let shader = ShaderModule::new().unwrap();
    let mut modules = 0;
    for entry in vat_core::backend::gpu::ENTRY_POINTS {
        for interpolation in [Interpolation::Point, Interpolation::Linear, Interpolation::Cubic] {
            for cross_fade in [false, true] {
                for (influences, vertex_format) in
                    [4, 8].into_iter().flat_map(|i| vat_tests_formats().into_iter().map(move |f| (i, f)))
                {
                    // Motion vectors follow the fade: both values are covered without doubling the count.
                    let motion_vectors = cross_fade;
                    let variant = ShaderVariant {
                        interpolation,
                        cross_fade,
                        influences,
                        vertex_format,
                        motion_vectors,
                        // vat's own entry points do not read PROGRAM (host vertex stages do).
                        program: 0,
                        // The shading specialisations cycle through the variants (run time, palette,
                        // materials; run time, vat's light model, PBR) without multiplying the count.
                        materials: [None, Some(false), Some(true)][modules % 3],
                        light_model: [None, Some(0), Some(1)][(modules / 3) % 3],
                        impostor_views: [ImpostorViews::PerCard, ImpostorViews::One, ImpostorViews::Three]
                            [(modules / 9) % 3],
                    };
                    let words = shader.spirv(entry, &variant).unwrap();
                    let info = vk::ShaderModuleCreateInfo::default().code(&words);
                    // SAFETY: SPIR-V words from naga; the module is destroyed right away.
                    unsafe {
                        let module = ctx.device.create_shader_module(&info, None).unwrap();
                        ctx.device.destroy_shader_module(module, None);
                    }
                    modules += 1;
                }
            }
        }
    }
    println!("{modules} shader modules: {} errors, {} warnings", messages.errors(), messages.warnings());
    drop(ctx);
    assert_eq!((messages.errors(), messages.warnings()), (0, 0), "the layer rejected SPIR-V (printed above)");
}
