//! The Vulkan context every object of this crate is made on: instance, physical device, device, one
//! graphics + compute queue and a command pool of its family.
//!
//! Three constructors: [`Context::headless`] opens its own (Vulkan 1.3; the Khronos validation layer and
//! a counting debug messenger when available, or never the layer with
//! [`Context::headless_with_validation`]; a physical device preferring the CPU type, Mesa's lavapipe in
//! CI) and destroys it on drop; [`Context::presenting`] does the same with a window's surface, the
//! surface extensions, `VK_KHR_swapchain` and a queue that can present to it (for
//! [`crate::Swapchain`]); [`Context::from_handles`] wraps an engine's own instance, device and queue
//! and destroys only the command pool it creates.

use std::any::Any;
use std::cell::Cell;
use std::ffi::{CStr, c_char, c_void};
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use ash::vk;
use raw_window_handle::{HasDisplayHandle, HasWindowHandle, RawDisplayHandle, RawWindowHandle};

use crate::{DeviceError, Error};

const VALIDATION_LAYER: &CStr = c"VK_LAYER_KHRONOS_validation";

/// The Vulkan 1.0 and 1.3 features a physical device supports.
///
/// # Safety
/// `pd` must be a physical device of `instance`.
pub(crate) unsafe fn supported_features(
    instance: &ash::Instance,
    pd: vk::PhysicalDevice,
) -> (vk::PhysicalDeviceFeatures, vk::PhysicalDeviceVulkan13Features<'static>) {
    let mut f13 = vk::PhysicalDeviceVulkan13Features::default();
    let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut f13);
    // SAFETY: the caller guarantees `pd` is of `instance`; the chain lives for the call.
    unsafe { instance.get_physical_device_features2(pd, &mut f2) };
    let f10 = f2.features;
    let f13 =
        vk::PhysicalDeviceVulkan13Features { dynamic_rendering: f13.dynamic_rendering, ..Default::default() };
    (f10, f13)
}

/// Counts of what the debug messenger reported (errors and warnings of any message type).
#[derive(Debug, Default)]
pub struct MessageCounts {
    errors: AtomicU32,
    warnings: AtomicU32,
}

impl MessageCounts {
    /// Error messages so far.
    pub fn errors(&self) -> u32 {
        self.errors.load(Ordering::SeqCst)
    }

    /// Warning messages so far.
    pub fn warnings(&self) -> u32 {
        self.warnings.load(Ordering::SeqCst)
    }
}

/// Prints every warning and error to stderr and counts it in the [`MessageCounts`] behind `user_data`.
unsafe extern "system" fn debug_callback(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    _types: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    user_data: *mut c_void,
) -> vk::Bool32 {
    // SAFETY: `user_data` is the `MessageCounts` shared by `Context`, which holds a reference to it
    // until after the messenger is destroyed.
    let counts = unsafe { (user_data as *const MessageCounts).as_ref() };
    // SAFETY: the loader passes valid callback data for the duration of the call; `p_message` is a
    // NUL-terminated string or null.
    let message =
        unsafe { data.as_ref().filter(|d| !d.p_message.is_null()).map(|d| CStr::from_ptr(d.p_message)) };
    let text = message.map_or(std::borrow::Cow::Borrowed("(no message)"), CStr::to_string_lossy);
    if severity.contains(vk::DebugUtilsMessageSeverityFlagsEXT::ERROR) {
        if let Some(c) = counts {
            c.errors.fetch_add(1, Ordering::SeqCst);
        }
        eprintln!("vulkan error: {text}");
    } else if severity.contains(vk::DebugUtilsMessageSeverityFlagsEXT::WARNING) {
        if let Some(c) = counts {
            c.warnings.fetch_add(1, Ordering::SeqCst);
        }
        eprintln!("vulkan warning: {text}");
    }
    vk::FALSE
}

/// A Vulkan instance, device and queue, created and destroyed by this struct ([`Context::headless`]).
/// `Send` but not `Sync`: its command pool and queue are used without locks.
pub struct Context {
    /// The loaded Vulkan library; kept alive as long as the instance.
    pub entry: ash::Entry,
    /// The instance.
    pub instance: ash::Instance,
    /// The physical device of [`device`](Self::device).
    pub physical_device: vk::PhysicalDevice,
    /// The logical device.
    pub device: ash::Device,
    /// A queue supporting compute and transfer.
    pub queue: vk::Queue,
    /// Family of [`queue`](Self::queue).
    pub queue_family: u32,
    /// A resettable command pool of `queue_family`, used for uploads and decodes.
    pub command_pool: vk::CommandPool,
    /// Limits and name of the physical device.
    pub properties: vk::PhysicalDeviceProperties,
    /// Memory types of the physical device.
    pub memory_properties: vk::PhysicalDeviceMemoryProperties,
    debug: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
    counts: Arc<MessageCounts>,
    validation: bool,
    /// Whether the instance and device are this context's (destroyed on drop) or the caller's.
    owns_device: bool,
    /// The window surface of a [`presenting`](Self::presenting) context.
    surface: Option<PresentSurface>,
    /// Allocations left before `vkAllocateMemory` is failed on purpose (tests); None: no limit.
    allocations_left: Cell<Option<u32>>,
    /// Buffers placed in host memory because video memory was full ([`Context::buffers_in_host_memory_for_want_of_video_memory`]).
    vram_fallbacks: Cell<u32>,
    /// The command pool and the queue need external synchronisation, which this crate does not do:
    /// the context may move between threads but is not shared by them.
    _not_sync: PhantomData<Cell<()>>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("device", &self.device_name())
            .field("queue_family", &self.queue_family)
            .field("validation", &self.validation)
            .finish_non_exhaustive()
    }
}

/// The window surface of a presenting context, and the window it was made from (kept alive as long
/// as the surface).
struct PresentSurface {
    loader: ash::khr::surface::Instance,
    surface: vk::SurfaceKHR,
    _window: Arc<dyn Any + Send + Sync>,
}

/// Destroys an instance (and its messenger and surface) when a later step of [`Context::headless`]
/// fails.
struct InstanceGuard {
    instance: ash::Instance,
    debug: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
    surface: Option<PresentSurface>,
}

impl Drop for InstanceGuard {
    fn drop(&mut self) {
        if let Some(s) = self.surface.take() {
            // SAFETY: the surface was created from this instance, nothing else uses it yet (no device
            // exists), and it is destroyed once.
            unsafe { s.loader.destroy_surface(s.surface, None) };
        }
        if let Some((utils, messenger)) = self.debug.take() {
            // SAFETY: the messenger was created from this instance and is destroyed once.
            unsafe { utils.destroy_debug_utils_messenger(messenger, None) };
        }
        // SAFETY: every child of the instance is destroyed by now (the device is created last and
        // the guard is disarmed once it exists).
        unsafe { self.instance.destroy_instance(None) };
    }
}

impl Context {
    /// Loads Vulkan and opens a headless context on the best physical device supporting Vulkan 1.3
    /// with a compute queue: a CPU device (lavapipe) first, then discrete, integrated, others. The
    /// validation layer is enabled when installed ([`validation_enabled`](Self::validation_enabled)),
    /// with a messenger that counts errors and warnings ([`messages`](Self::messages)).
    ///
    /// # Errors
    /// [`DeviceError::Load`](crate::DeviceError::Load) without a Vulkan loader, [`DeviceError::NoDevice`](crate::DeviceError::NoDevice) without a suitable
    /// device, [`DeviceError::Vk`](crate::DeviceError::Vk) if a Vulkan call fails.
    pub fn headless() -> Result<Self, Error> {
        Self::headless_with_validation(true)
    }

    /// [`headless`](Self::headless), choosing whether to enable the validation layer: `false` never
    /// enables it (for measuring CPU costs, which the layer inflates several times over; the bench
    /// `cargo bench -p vat-vulkan --bench render` uses it), `true` enables it when installed, as
    /// [`headless`](Self::headless). The debug messenger is installed either way when
    /// `VK_EXT_debug_utils` is available (without the layer it reports only the loader's and driver's
    /// messages). A layer forced on by the environment (`VK_INSTANCE_LAYERS`, the Vulkan configurator)
    /// is not prevented, and is not reported by [`validation_enabled`](Self::validation_enabled).
    ///
    /// # Errors
    /// As [`headless`](Self::headless).
    pub fn headless_with_validation(validation: bool) -> Result<Self, Error> {
        Self::open(validation, None)
    }

    /// [`headless_with_validation`](Self::headless_with_validation) for presenting to `window`: the
    /// instance also gets `VK_KHR_surface` and the window system's surface extension (Xlib, XCB or
    /// Wayland windows), a surface is made for the window ([`surface`](Self::surface), destroyed
    /// with the context, which keeps `window` alive until then), and the device gets
    /// `VK_KHR_swapchain` and a graphics + compute queue family that can present to the surface
    /// (the physical device is chosen as by [`headless`](Self::headless) among those that can).
    /// Make a [`crate::Swapchain`] on it. The wgpu twin is `vat_wgpu::presenting_device`.
    ///
    /// # Errors
    /// [`DeviceError::Window`](crate::DeviceError::Window) for a window of another kind or without handles, the
    /// [`DeviceError::NoDevice`](crate::DeviceError::NoDevice) of a system where no device can present to it, and those of
    /// [`headless`](Self::headless).
    pub fn presenting<W>(window: Arc<W>, validation: bool) -> Result<Self, Error>
    where
        W: HasWindowHandle + HasDisplayHandle + Send + Sync + 'static,
    {
        let display = window.display_handle().map_err(|e| DeviceError::Window(e.to_string()))?.as_raw();
        let handle = window.window_handle().map_err(|e| DeviceError::Window(e.to_string()))?.as_raw();
        Self::open(validation, Some(WindowHandles { display, handle, owner: window }))
    }

    /// [`headless_with_validation`](Self::headless_with_validation), presenting to `window` when given.
    fn open(validation: bool, window: Option<WindowHandles>) -> Result<Self, Error> {
        // Held to the end, so that it covers the instance guard's teardown on every error path too.
        let _lifetime = vat_core::backend::device_lifetime_lock();
        let surface_extensions = match &window {
            Some(w) => surface_extensions(w.display)?,
            None => &[],
        };
        // SAFETY: loading the system's Vulkan loader; nothing else in the process unloads it.
        let entry = unsafe { ash::Entry::load() }.map_err(|e| DeviceError::Load(e.to_string()))?;
        let validation = validation && {
            // SAFETY: plain query on a loaded entry.
            let layers =
                unsafe { entry.enumerate_instance_layer_properties() }.map_err(DeviceError::vk("layers"))?;
            layers.iter().any(|l| l.layer_name_as_c_str().is_ok_and(|n| n == VALIDATION_LAYER))
        };
        // SAFETY: plain query on a loaded entry.
        let extensions = unsafe { entry.enumerate_instance_extension_properties(None) }
            .map_err(DeviceError::vk("instance extensions"))?;
        let has_debug_utils = validation
            || extensions
                .iter()
                .any(|e| e.extension_name_as_c_str().is_ok_and(|n| n == ash::ext::debug_utils::NAME));
        let layer_names: Vec<*const c_char> =
            if validation { vec![VALIDATION_LAYER.as_ptr()] } else { Vec::new() };
        let mut extension_names: Vec<*const c_char> =
            if has_debug_utils { vec![ash::ext::debug_utils::NAME.as_ptr()] } else { Vec::new() };
        for &name in surface_extensions {
            if !extensions.iter().any(|e| e.extension_name_as_c_str().is_ok_and(|n| n == name)) {
                return Err(DeviceError::Window(format!(
                    "the Vulkan loader lacks {} (install libvulkan1 and mesa-vulkan-drivers)",
                    name.to_string_lossy()
                ))
                .into());
            }
            extension_names.push(name.as_ptr());
        }
        let app = vk::ApplicationInfo::default()
            .application_name(c"vat")
            .engine_name(c"vat-vulkan")
            .api_version(vk::API_VERSION_1_3);
        let info = vk::InstanceCreateInfo::default()
            .application_info(&app)
            .enabled_layer_names(&layer_names)
            .enabled_extension_names(&extension_names);
        // SAFETY: the create info and the strings it points to live until the call returns.
        let instance =
            unsafe { entry.create_instance(&info, None) }.map_err(DeviceError::vk("create instance"))?;
        // Declared before the guard so that it outlives the messenger on every path.
        let counts = Arc::<MessageCounts>::default();
        let mut guard = InstanceGuard { instance, debug: None, surface: None };
        if has_debug_utils {
            guard.debug = Some(debug_messenger(&entry, &guard.instance, &counts)?);
        }
        if let Some(w) = window {
            // SAFETY: the handles are those of `w.owner`, a live window that the surface keeps alive
            // (it is stored with it); the instance has the surface extensions of its window system.
            let surface = unsafe { create_surface(&entry, &guard.instance, w.display, w.handle) }?;
            let loader = ash::khr::surface::Instance::new(&entry, &guard.instance);
            guard.surface = Some(PresentSurface { loader, surface, _window: w.owner });
        }
        let instance = &guard.instance;
        // SAFETY: plain query on a live instance.
        let devices =
            unsafe { instance.enumerate_physical_devices() }.map_err(DeviceError::vk("physical devices"))?;
        let requirements = if guard.surface.is_some() {
            crate::DeviceRequirements::presenting()
        } else {
            crate::DeviceRequirements::offscreen()
        };
        let (physical_device, properties, queue_family) =
            pick_device(instance, devices, guard.surface.as_ref(), &requirements)?;
        let priorities = [1.0f32];
        let queue_info = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(queue_family)
            .queue_priorities(&priorities)];
        let mut features13 = requirements.vulkan13_features();
        let mut features = vk::PhysicalDeviceFeatures2::default().features(requirements.features);
        let device_extensions: Vec<*const c_char> =
            requirements.extensions.iter().map(|e| e.as_ptr()).collect();
        let device_info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queue_info)
            .enabled_extension_names(&device_extensions)
            .push_next(&mut features)
            .push_next(&mut features13);
        // SAFETY: the create info lives until the call returns; `physical_device` is of this instance.
        let device = unsafe { instance.create_device(physical_device, &device_info, None) }
            .map_err(DeviceError::vk("create device"))?;
        // SAFETY: family `queue_family` was requested with one queue.
        let queue = unsafe { device.get_device_queue(queue_family, 0) };
        let pool_info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(queue_family)
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        // SAFETY: valid create info on a live device.
        let command_pool = match unsafe { device.create_command_pool(&pool_info, None) } {
            Ok(p) => p,
            Err(e) => {
                // SAFETY: nothing was created from the device yet.
                unsafe { device.destroy_device(None) };
                return Err(DeviceError::from_vk("create command pool", e));
            }
        };
        // SAFETY: plain query.
        let memory_properties = unsafe { instance.get_physical_device_memory_properties(physical_device) };
        let instance = guard.instance.clone();
        let debug = guard.debug.take();
        let surface = guard.surface.take();
        std::mem::forget(guard);
        Ok(Self {
            entry,
            instance,
            physical_device,
            device,
            queue,
            queue_family,
            command_pool,
            properties,
            memory_properties,
            debug,
            counts,
            validation,
            owns_device: true,
            surface,
            allocations_left: Cell::new(None),
            vram_fallbacks: Cell::new(0),
            _not_sync: PhantomData,
        })
    }

    /// A context on an instance, physical device, device and queue the caller created and keeps
    /// owning (an engine's). Only a command pool on `queue_family` is created (for uploads, decodes
    /// and read-backs, submitted to `queue` and waited for with a fence); dropping the context
    /// destroys that pool and nothing else. No debug messenger is installed: the caller's own
    /// messenger, if any, sees this crate's messages.
    ///
    /// The device must have been created with Vulkan 1.3's `dynamicRendering` and Vulkan 1.0's
    /// `drawIndirectFirstInstance` and `independentBlend` features enabled (Vulkan cannot be asked
    /// which features a device was created with), and `queue_family` must support graphics and
    /// compute.
    ///
    /// # Safety
    /// `instance`, `physical_device`, `device` and `queue` must be valid, related (the device created
    /// from that physical device of that instance, the queue from the device's `queue_family`), and
    /// outlive the context and everything made from it (renderers, uploaded assets). While this
    /// crate uses the queue (any call that uploads, decodes, reads back or drops a renderer or asset,
    /// which waits for the device to be idle), no other thread may use the queue or the device's
    /// other queues: Vulkan requires external synchronisation of queue submissions.
    ///
    /// # Errors
    /// [`DeviceError::NoDevice`](crate::DeviceError::NoDevice) if the physical device is older than Vulkan 1.3 or the family lacks
    /// graphics or compute; [`DeviceError::Vk`](crate::DeviceError::Vk) if the command pool cannot be created.
    pub unsafe fn from_handles(
        entry: ash::Entry,
        instance: ash::Instance,
        physical_device: vk::PhysicalDevice,
        device: ash::Device,
        queue: vk::Queue,
        queue_family: u32,
    ) -> Result<Self, Error> {
        // SAFETY: the caller guarantees the handles are valid and related.
        let properties = unsafe { instance.get_physical_device_properties(physical_device) };
        // SAFETY: as above.
        let families = unsafe { instance.get_physical_device_queue_family_properties(physical_device) };
        let requirements = crate::DeviceRequirements::offscreen();
        let family_ok = families
            .get(queue_family as usize)
            .is_some_and(|f| f.queue_flags.contains(requirements.queue_flags));
        if properties.api_version < requirements.api_version || !family_ok {
            return Err(DeviceError::NoDevice.into());
        }
        let pool_info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(queue_family)
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        // SAFETY: valid create info on the caller's live device.
        let command_pool = unsafe { device.create_command_pool(&pool_info, None) }
            .map_err(DeviceError::vk("create command pool"))?;
        // SAFETY: as above.
        let memory_properties = unsafe { instance.get_physical_device_memory_properties(physical_device) };
        Ok(Self {
            entry,
            instance,
            physical_device,
            device,
            queue,
            queue_family,
            command_pool,
            properties,
            memory_properties,
            debug: None,
            counts: Arc::default(),
            validation: false,
            owns_device: false,
            surface: None,
            allocations_left: Cell::new(None),
            vram_fallbacks: Cell::new(0),
            _not_sync: PhantomData,
        })
    }

    /// Whether the instance and device are this context's own ([`headless`](Self::headless)) rather
    /// than the caller's ([`from_handles`](Self::from_handles)).
    pub fn owns_device(&self) -> bool {
        self.owns_device
    }

    /// Fault injection for tests: after `allocations` more memory allocations by this crate, every
    /// further allocation fails with `ERROR_OUT_OF_DEVICE_MEMORY` (without calling Vulkan), until
    /// this is called again with `None`. Lets a test fail an upload at each of its steps and check
    /// that nothing it created is left alive.
    pub fn fail_allocations_after(&self, allocations: Option<u32>) {
        self.allocations_left.set(allocations);
    }

    /// Counts one memory allocation against [`fail_allocations_after`](Self::fail_allocations_after).
    pub(crate) fn count_allocation(&self) -> Result<(), Error> {
        match self.allocations_left.get() {
            Some(0) => Err(Error::Device(DeviceError::Vk {
                what: "allocate memory (failed on purpose)",
                result: vk::Result::ERROR_OUT_OF_DEVICE_MEMORY,
            })),
            Some(n) => {
                self.allocations_left.set(Some(n - 1));
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// The window surface of a [`presenting`](Self::presenting) context (`None` otherwise).
    pub fn surface(&self) -> Option<vk::SurfaceKHR> {
        self.surface.as_ref().map(|s| s.surface)
    }

    /// The `VK_KHR_surface` functions of a presenting context.
    pub(crate) fn surface_loader(&self) -> Option<&ash::khr::surface::Instance> {
        self.surface.as_ref().map(|s| &s.loader)
    }

    /// Whether the Khronos validation layer is enabled.
    pub fn validation_enabled(&self) -> bool {
        self.validation
    }

    /// Whether a debug messenger is counting messages (always with validation).
    pub fn messenger_enabled(&self) -> bool {
        self.debug.is_some()
    }

    /// Errors and warnings reported by the debug messenger so far. The counts stay readable after the
    /// context is dropped, so that what the validation layer reports while the device is destroyed
    /// (objects never destroyed) is counted too.
    pub fn messages(&self) -> Arc<MessageCounts> {
        Arc::clone(&self.counts)
    }

    /// The physical device's name.
    pub fn device_name(&self) -> String {
        self.properties
            .device_name_as_c_str()
            .map_or_else(|_| "?".to_owned(), |n| n.to_string_lossy().into_owned())
    }

    /// Whether optimally tiled 2D images of `format` can be sampled (`textureLoad`) and filled by a
    /// transfer on this physical device: what every texture of an asset needs.
    pub fn supports_sampled_image(&self, format: vk::Format) -> bool {
        // SAFETY: `physical_device` is of `instance`, both live as long as the context.
        let props =
            unsafe { self.instance.get_physical_device_format_properties(self.physical_device, format) };
        let needed = vk::FormatFeatureFlags::SAMPLED_IMAGE | vk::FormatFeatureFlags::TRANSFER_DST;
        props.optimal_tiling_features.contains(needed)
    }

    /// Index of a memory type allowed by `type_bits` with all of `flags`.
    pub(crate) fn memory_type(&self, type_bits: u32, flags: vk::MemoryPropertyFlags) -> Option<u32> {
        memory_type_in(&self.memory_properties, type_bits, flags)
    }

    /// The memory types of a host-visible, coherent buffer allowed by `type_bits`, best first
    /// ([`host_buffer_memory_types`]).
    pub(crate) fn host_buffer_memory_types(&self, type_bits: u32, read_back: bool) -> Vec<u32> {
        host_buffer_memory_types(&self.memory_properties, type_bits, read_back)
    }

    /// Counts a buffer that went to host memory because video memory was full.
    pub(crate) fn count_vram_fallback(&self) {
        self.vram_fallbacks.set(self.vram_fallbacks.get().saturating_add(1));
    }

    /// How many buffers this context placed in host memory because the video memory they would
    /// have gone in was full (`ERROR_OUT_OF_DEVICE_MEMORY` there): they work, read across the bus.
    /// 0 unless [`buffer_placement`](Self::buffer_placement) is `"video memory"` and the host
    /// application filled it.
    pub fn buffers_in_host_memory_for_want_of_video_memory(&self) -> u32 {
        self.vram_fallbacks.get()
    }

    /// Where buffers the GPU reads are placed on this device: `"video memory"` when it exposes all
    /// of its video memory to the host (resizable BAR, or one unified heap), else `"host memory"`
    /// (any memory type allowed; a buffer's own allowed types may narrow that). For reports, such
    /// as `vat bench`'s adapter line.
    pub fn buffer_placement(&self) -> &'static str {
        let m = &self.memory_properties;
        let chosen = host_buffer_memory_type(m, u32::MAX, false);
        let local = chosen.is_some_and(|i| {
            m.memory_types[i as usize].property_flags.contains(vk::MemoryPropertyFlags::DEVICE_LOCAL)
        });
        if local { "video memory" } else { "host memory" }
    }
}

/// Index of the first memory type of `m` allowed by `type_bits` with all of `flags`.
fn memory_type_in(
    m: &vk::PhysicalDeviceMemoryProperties,
    type_bits: u32,
    flags: vk::MemoryPropertyFlags,
) -> Option<u32> {
    let count = m.memory_type_count.min(vk::MAX_MEMORY_TYPES as u32);
    (0..count)
        .find(|&i| type_bits & (1 << i) != 0 && m.memory_types[i as usize].property_flags.contains(flags))
}

/// The memory type for a buffer the CPU writes (instance records, uniforms, the asset's buffers)
/// or, with `read_back`, reads (culling counts, readbacks), allowed by `type_bits`; always
/// host-visible and coherent (the buffer is mapped).
///
/// A buffer the GPU reads every frame goes in video memory the CPU can write when the device
/// exposes all of its video memory that way (resizable BAR: a device-local, host-visible type on
/// the largest device-local heap; integrated GPUs and lavapipe have only such types), else in
/// host memory: on a discrete GPU without resizable BAR the host-visible window into video memory
/// is a separate 256 MiB heap that the host application may need, so it is left alone. Host
/// memory is read by the GPU across the bus, once per access beyond its caches: a million
/// instance records (64 MiB) outgrow them. A read-back buffer prefers cached host memory (the CPU
/// reads uncached video memory slowly).
pub(crate) fn host_buffer_memory_type(
    m: &vk::PhysicalDeviceMemoryProperties,
    type_bits: u32,
    read_back: bool,
) -> Option<u32> {
    host_buffer_memory_types(m, type_bits, read_back).first().copied()
}

/// [`host_buffer_memory_type`]'s choice first, then, when that is video memory, the host memory
/// type a buffer falls back to when video memory is full (a host application that filled it
/// with its own textures would otherwise lose the crowd for want of a few MiB). Empty when no
/// allowed type is host-visible and coherent.
pub(crate) fn host_buffer_memory_types(
    m: &vk::PhysicalDeviceMemoryProperties,
    type_bits: u32,
    read_back: bool,
) -> Vec<u32> {
    use vk::MemoryPropertyFlags as F;
    let host = F::HOST_VISIBLE | F::HOST_COHERENT;
    let Some(first) = first_host_buffer_memory_type(m, type_bits, read_back) else { return Vec::new() };
    let local = |i: u32| m.memory_types[i as usize].property_flags.contains(F::DEVICE_LOCAL);
    let count = m.memory_type_count.min(vk::MAX_MEMORY_TYPES as u32);
    let fallback = (0..count).find(|&i| {
        type_bits & (1 << i) != 0 && m.memory_types[i as usize].property_flags.contains(host) && !local(i)
    });
    match fallback {
        Some(f) if local(first) => vec![first, f],
        _ => vec![first],
    }
}

/// The result of `allocate` for the first of `candidates` (memory type indices, best first) that
/// has room: a type whose heap is full (`ERROR_OUT_OF_DEVICE_MEMORY`) hands over to the next, and
/// `on_fallback` is called once when a later candidate succeeds. Any other error, or the last
/// candidate's, is returned as it is. `candidates` must not be empty.
pub(crate) fn allocate_with_fallback<T>(
    candidates: &[u32],
    mut allocate: impl FnMut(u32) -> Result<T, Error>,
    on_fallback: impl FnOnce(),
) -> Result<T, Error> {
    let mut result = Err(Error::Device(DeviceError::NoMemoryType("buffer")));
    for (k, &type_index) in candidates.iter().enumerate() {
        result = allocate(type_index);
        match &result {
            Ok(_) if k > 0 => {
                on_fallback();
                break;
            }
            Err(Error::Device(DeviceError::Vk {
                result: vk::Result::ERROR_OUT_OF_DEVICE_MEMORY, ..
            })) => {}
            _ => break,
        }
    }
    result
}

/// [`host_buffer_memory_type`] itself.
fn first_host_buffer_memory_type(
    m: &vk::PhysicalDeviceMemoryProperties,
    type_bits: u32,
    read_back: bool,
) -> Option<u32> {
    use vk::MemoryPropertyFlags as F;
    let host = F::HOST_VISIBLE | F::HOST_COHERENT;
    if read_back {
        return memory_type_in(m, type_bits, host | F::HOST_CACHED)
            .or_else(|| memory_type_in(m, type_bits, host));
    }
    let heaps = &m.memory_heaps[..(m.memory_heap_count as usize).min(vk::MAX_MEMORY_HEAPS)];
    let vram = (0..heaps.len())
        .filter(|&h| heaps[h].flags.contains(vk::MemoryHeapFlags::DEVICE_LOCAL))
        .max_by_key(|&h| heaps[h].size);
    let count = m.memory_type_count.min(vk::MAX_MEMORY_TYPES as u32);
    let in_vram = (0..count).find(|&i| {
        let t = &m.memory_types[i as usize];
        type_bits & (1 << i) != 0
            && t.property_flags.contains(host | F::DEVICE_LOCAL)
            && Some(t.heap_index as usize) == vram
    });
    in_vram.or_else(|| memory_type_in(m, type_bits, host))
}

impl Drop for Context {
    fn drop(&mut self) {
        if !self.owns_device {
            // SAFETY: the pool is this context's; everything allocated from it is gone (every
            // renderer, asset and scope holds the context), and the caller's device is idle for it.
            unsafe {
                let _ = self.device.device_wait_idle();
                self.device.destroy_command_pool(self.command_pool, None);
            }
            return;
        }
        let _lifetime = vat_core::backend::device_lifetime_lock();
        // SAFETY: waits for the device before destroying it; everything this crate creates borrows the
        // context, so it is gone by now. Order: pool, device, messenger, instance.
        unsafe {
            let _ = self.device.device_wait_idle();
            self.device.destroy_command_pool(self.command_pool, None);
            self.device.destroy_device(None);
        }
        if let Some(s) = self.surface.take() {
            // SAFETY: created from this instance; its swapchains are gone (each holds the context).
            unsafe { s.loader.destroy_surface(s.surface, None) };
        }
        if let Some((utils, messenger)) = self.debug.take() {
            // SAFETY: created from this instance, destroyed once, before the instance.
            unsafe { utils.destroy_debug_utils_messenger(messenger, None) };
        }
        // SAFETY: the device and the messenger are destroyed.
        unsafe { self.instance.destroy_instance(None) };
    }
}

/// A window's raw handles and the window itself (kept alive by the surface made from them).
struct WindowHandles {
    display: RawDisplayHandle,
    handle: RawWindowHandle,
    owner: Arc<dyn Any + Send + Sync>,
}

/// The instance extensions a surface of a window on `display` needs.
fn surface_extensions(display: RawDisplayHandle) -> Result<&'static [&'static CStr], Error> {
    match display {
        RawDisplayHandle::Xlib(_) => Ok(&[ash::khr::surface::NAME, ash::khr::xlib_surface::NAME]),
        RawDisplayHandle::Xcb(_) => Ok(&[ash::khr::surface::NAME, ash::khr::xcb_surface::NAME]),
        RawDisplayHandle::Wayland(_) => Ok(&[ash::khr::surface::NAME, ash::khr::wayland_surface::NAME]),
        other => Err(DeviceError::Window(format!("cannot present to a window of {other:?}")).into()),
    }
}

/// A surface for the window `handle` on `display`.
///
/// # Safety
/// The handles must be those of a live window (and its display connection) that outlives the
/// surface; `instance` must have been created with [`surface_extensions`] of `display`.
unsafe fn create_surface(
    entry: &ash::Entry,
    instance: &ash::Instance,
    display: RawDisplayHandle,
    handle: RawWindowHandle,
) -> Result<vk::SurfaceKHR, Error> {
    let missing = || DeviceError::Window("the window system returned a null display".into());
    let result = match (display, handle) {
        (RawDisplayHandle::Xlib(d), RawWindowHandle::Xlib(w)) => {
            let dpy = d.display.ok_or_else(missing)?.as_ptr();
            let info = vk::XlibSurfaceCreateInfoKHR::default().dpy(dpy).window(w.window);
            // SAFETY: the caller guarantees a live display and window; the instance has the extension.
            unsafe { ash::khr::xlib_surface::Instance::new(entry, instance).create_xlib_surface(&info, None) }
        }
        (RawDisplayHandle::Xcb(d), RawWindowHandle::Xcb(w)) => {
            let connection = d.connection.ok_or_else(missing)?.as_ptr();
            let info = vk::XcbSurfaceCreateInfoKHR::default().connection(connection).window(w.window.get());
            // SAFETY: as above.
            unsafe { ash::khr::xcb_surface::Instance::new(entry, instance).create_xcb_surface(&info, None) }
        }
        (RawDisplayHandle::Wayland(d), RawWindowHandle::Wayland(w)) => {
            let info = vk::WaylandSurfaceCreateInfoKHR::default()
                .display(d.display.as_ptr())
                .surface(w.surface.as_ptr());
            // SAFETY: as above.
            unsafe {
                ash::khr::wayland_surface::Instance::new(entry, instance).create_wayland_surface(&info, None)
            }
        }
        (d, w) => return Err(DeviceError::Window(format!("cannot present to {w:?} on {d:?}")).into()),
    };
    result.map_err(DeviceError::vk("create window surface"))
}

/// Whether physical device `pd` of `instance` offers device extension `name`.
///
/// # Safety
/// `pd` must be a physical device of `instance`.
pub(crate) unsafe fn has_device_extension(
    instance: &ash::Instance,
    pd: vk::PhysicalDevice,
    name: &CStr,
) -> bool {
    // SAFETY: the caller guarantees `pd` is of `instance`.
    let extensions = unsafe { instance.enumerate_device_extension_properties(pd) }.unwrap_or_default();
    extensions.iter().any(|e| e.extension_name_as_c_str().is_ok_and(|n| n == name))
}
/// The debug messenger on `instance` that counts the validation layer's warnings and errors into
/// `counts`.
fn debug_messenger(
    entry: &ash::Entry,
    instance: &ash::Instance,
    counts: &Arc<MessageCounts>,
) -> Result<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT), Error> {
    let utils = ash::ext::debug_utils::Instance::new(entry, instance);
    let info = vk::DebugUtilsMessengerCreateInfoEXT::default()
        .message_severity(
            vk::DebugUtilsMessageSeverityFlagsEXT::WARNING | vk::DebugUtilsMessageSeverityFlagsEXT::ERROR,
        )
        .message_type(
            vk::DebugUtilsMessageTypeFlagsEXT::GENERAL
                | vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
                | vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE,
        )
        .pfn_user_callback(Some(debug_callback))
        .user_data(Arc::as_ptr(counts).cast_mut().cast());
    // SAFETY: the user data (the shared counts) outlives the messenger: the context holds a
    // reference until `Drop` has destroyed the messenger, and the caller's guard destroys it on every
    // failure path before `counts` is dropped.
    let messenger = unsafe { utils.create_debug_utils_messenger(&info, None) }
        .map_err(DeviceError::vk("create debug messenger"))?;
    Ok((utils, messenger))
}

/// The physical device of `devices` to open: one that meets `requirements` with a queue family of
/// its queue flags (that presents to `surface`, when given), the CPU device first, then discrete,
/// integrated and other GPUs; its properties and the queue family.
fn pick_device(
    instance: &ash::Instance,
    devices: Vec<vk::PhysicalDevice>,
    surface: Option<&PresentSurface>,
    requirements: &crate::DeviceRequirements,
) -> Result<(vk::PhysicalDevice, vk::PhysicalDeviceProperties, u32), Error> {
    let rank = |t: vk::PhysicalDeviceType| match t {
        vk::PhysicalDeviceType::CPU => 0,
        vk::PhysicalDeviceType::DISCRETE_GPU => 1,
        vk::PhysicalDeviceType::INTEGRATED_GPU => 2,
        _ => 3,
    };
    let mut candidates = Vec::new();
    for pd in devices {
        // SAFETY: `pd` was enumerated from this instance.
        if unsafe { requirements.check(instance, pd) }.is_err() {
            continue;
        }
        // SAFETY: as above.
        let props = unsafe { instance.get_physical_device_properties(pd) };
        // SAFETY: as above.
        let families = unsafe { instance.get_physical_device_queue_family_properties(pd) };
        let family = (0..families.len() as u32).find(|&i| {
            families[i as usize].queue_flags.contains(requirements.queue_flags)
                && surface.is_none_or(|s| {
                    // SAFETY: `pd` and the surface are of this instance; `i` is a family of `pd`.
                    unsafe { s.loader.get_physical_device_surface_support(pd, i, s.surface) }.unwrap_or(false)
                })
        });
        if let Some(family) = family {
            candidates.push((rank(props.device_type), pd, props, family));
        }
    }
    candidates.sort_by_key(|c| c.0);
    let Some(&(_, physical_device, properties, queue_family)) = candidates.first() else {
        return Err(DeviceError::NoDevice.into());
    };
    Ok((physical_device, properties, queue_family))
}

#[cfg(test)]
mod tests {
    use ash::vk;
    use vk::MemoryPropertyFlags as F;

    use super::{allocate_with_fallback, host_buffer_memory_type, host_buffer_memory_types};
    use crate::{DeviceError, Error};

    /// Memory properties with `heaps` (size in MiB, device-local) and `types` (flags, heap).
    fn props(heaps: &[(u64, bool)], types: &[(F, u32)]) -> vk::PhysicalDeviceMemoryProperties {
        let mut m = vk::PhysicalDeviceMemoryProperties {
            memory_heap_count: heaps.len() as u32,
            memory_type_count: types.len() as u32,
            ..Default::default()
        };
        for (i, &(mib, local)) in heaps.iter().enumerate() {
            let flags = if local { vk::MemoryHeapFlags::DEVICE_LOCAL } else { vk::MemoryHeapFlags::empty() };
            m.memory_heaps[i] = vk::MemoryHeap { size: mib << 20, flags };
        }
        for (i, &(property_flags, heap_index)) in types.iter().enumerate() {
            m.memory_types[i] = vk::MemoryType { property_flags, heap_index };
        }
        m
    }

    const HOST: F = F::from_raw(F::HOST_VISIBLE.as_raw() | F::HOST_COHERENT.as_raw());
    const CACHED: F = F::from_raw(HOST.as_raw() | F::HOST_CACHED.as_raw());
    const BAR: F = F::from_raw(HOST.as_raw() | F::DEVICE_LOCAL.as_raw());

    #[test]
    fn buffers_the_gpu_reads_go_in_video_memory_only_with_resizable_bar() {
        let all = u32::MAX;
        // A discrete GPU with resizable BAR: video memory (heap 0) is host-visible as a whole.
        let rebar = props(
            &[(81_920, true), (65_536, false)],
            &[(F::DEVICE_LOCAL, 0), (HOST, 1), (CACHED, 1), (BAR, 0)],
        );
        assert_eq!(host_buffer_memory_type(&rebar, all, false), Some(3));
        assert_eq!(host_buffer_memory_type(&rebar, all, true), Some(2));
        // A type the buffer does not allow is not taken.
        assert_eq!(host_buffer_memory_type(&rebar, all & !(1 << 3), false), Some(1));
        // Without resizable BAR the host-visible video memory is a 256 MiB heap of its own: left to
        // the host application, the buffer goes to host memory.
        let window = props(
            &[(81_920, true), (65_536, false), (256, true)],
            &[(F::DEVICE_LOCAL, 0), (HOST, 1), (CACHED, 1), (BAR, 2)],
        );
        assert_eq!(host_buffer_memory_type(&window, all, false), Some(1));
        assert_eq!(host_buffer_memory_type(&window, all, true), Some(2));
        // An integrated GPU or lavapipe: one heap, every type device-local and host-visible.
        let unified = props(&[(16_384, true)], &[(F::DEVICE_LOCAL, 0), (BAR | F::HOST_CACHED, 0)]);
        assert_eq!(host_buffer_memory_type(&unified, all, false), Some(1));
        assert_eq!(host_buffer_memory_type(&unified, all, true), Some(1));
        // No host-visible type at all.
        let none = props(&[(1024, true)], &[(F::DEVICE_LOCAL, 0)]);
        assert_eq!(host_buffer_memory_type(&none, all, false), None);
        assert_eq!(host_buffer_memory_type(&none, all, true), None);
    }

    #[test]
    fn a_buffer_falls_back_to_host_memory_when_video_memory_is_full() {
        let all = u32::MAX;
        let rebar = props(
            &[(81_920, true), (65_536, false)],
            &[(F::DEVICE_LOCAL, 0), (HOST, 1), (CACHED, 1), (BAR, 0)],
        );
        // Video memory first, host memory after it; a read-back (host memory already) and a
        // unified device (no host memory apart from video memory) have nowhere else to go.
        assert_eq!(host_buffer_memory_types(&rebar, all, false), vec![3, 1]);
        assert_eq!(host_buffer_memory_types(&rebar, all, true), vec![2]);
        let unified = props(&[(16_384, true)], &[(F::DEVICE_LOCAL, 0), (BAR | F::HOST_CACHED, 0)]);
        assert_eq!(host_buffer_memory_types(&unified, all, false), vec![1]);
        assert!(
            host_buffer_memory_types(&props(&[(1024, true)], &[(F::DEVICE_LOCAL, 0)]), all, false).is_empty()
        );

        let vk_error = |result| Error::Device(DeviceError::Vk { what: "allocate memory", result });
        // Type 3's heap is full: type 1 takes the buffer, and the fallback is counted once.
        let (mut tried, mut fallbacks) = (Vec::new(), 0);
        let got = allocate_with_fallback(
            &[3, 1],
            |t| {
                tried.push(t);
                if t == 3 { Err(vk_error(vk::Result::ERROR_OUT_OF_DEVICE_MEMORY)) } else { Ok(t) }
            },
            || fallbacks += 1,
        );
        assert_eq!((got.ok(), tried, fallbacks), (Some(1), vec![3, 1], 1));
        // Room in video memory: no fallback.
        let mut fallbacks = 0;
        let got = allocate_with_fallback(&[3, 1], Ok::<u32, Error>, || fallbacks += 1);
        assert_eq!((got.ok(), fallbacks), (Some(3), 0));
        // Another error is returned at once; the last candidate's error is returned as it is.
        let mut tried = Vec::new();
        let got = allocate_with_fallback::<u32>(
            &[3, 1],
            |t| {
                tried.push(t);
                Err(vk_error(vk::Result::ERROR_OUT_OF_HOST_MEMORY))
            },
            || unreachable!("nothing was allocated"),
        );
        let is =
            |e: &Error, want| matches!(e, Error::Device(DeviceError::Vk { result, .. }) if *result == want);
        let e = got.expect_err("host memory is out");
        assert!(is(&e, vk::Result::ERROR_OUT_OF_HOST_MEMORY), "{e:?}");
        assert_eq!(tried, vec![3]);
        let got = allocate_with_fallback::<u32>(
            &[3, 1],
            |_| Err(vk_error(vk::Result::ERROR_OUT_OF_DEVICE_MEMORY)),
            || unreachable!("nothing was allocated"),
        );
        let e = got.expect_err("both are full");
        assert!(is(&e, vk::Result::ERROR_OUT_OF_DEVICE_MEMORY), "{e:?}");
    }
}
